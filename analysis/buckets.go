package analysis

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// readBuckets reads HDR buckets a SQL engine computed (ingest's buckets
// format) into set: each row's calls at its bucket's lowest value, which
// the histogram keeps of any value in the bucket, so the histograms are
// those a read of the rows one by one fills. The rows carry no times:
// --from and --to were the query's. Rows of arrivals (tunetimeout sql
// --arrivals) give the rates, as the calls' times give them in a local
// read; without them, rates come from --rate.
//
// With --window, the rows need their window (a window_start column, as
// tunetimeout clickhouse --window asks the engine for): each row's calls
// go to its window's cell, and each second of arrivals to the cell that
// holds it, as a local read's calls go by their times; rows without a
// time to the untimed cell. At most sqlsource.MaxWindows windows are
// kept: an answer of more is refused (a longer --window or a shorter
// period), so the windows' memory stays bounded.
//
// Rows of the group the engine folded the groups beyond --max-groups into
// go to histogram.Other, counted as folded, with the number of groups the
// engine folded (the same on every such row of one answer).
func readBuckets(ctx context.Context, name string, r io.Reader, o Options, set *histogram.Set, logs *logState, in *report.Input) error {
	foldedGroups := int64(0)
	window := func(start int64) error {
		if _, ok := logs.bucketWindows[start]; ok {
			return nil
		}
		if len(logs.bucketWindows) >= sqlsource.MaxWindows {
			return fmt.Errorf("%s: more than %s windows of %s: give a longer %s, or a shorter period (%s, %s)",
				name, human.Count(int64(sqlsource.MaxWindows)), human.Duration(o.every), usage.Window, usage.From, usage.To)
		}
		if logs.bucketWindows == nil {
			logs.bucketWindows = map[int64]struct{}{}
		}
		logs.bucketWindows[start] = struct{}{}
		return nil
	}
	return ingest.ReadBuckets(r, name, o.Ingest.RoutePatterns, func(b *ingest.BucketRow) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var g *histogram.Group
		if b.FoldedGroups > 0 {
			g = set.Group(histogram.Other)
			if !b.Arrivals {
				groups := 0
				if foldedGroups == 0 {
					foldedGroups, groups = b.FoldedGroups, int(b.FoldedGroups)
				}
				set.AddFoldedUnnamed(b.Calls, groups)
			}
		} else {
			g = set.Group(groupName(b.Group))
		}
		if g.Latency == nil {
			// The set keeps windows (--window): by the row's window.
			return bucketCell(b, g, name, in, window)
		}
		if b.Arrivals {
			// The rates' own rows: their calls are those of the buckets.
			g.Arrivals.AddN(b.Second, b.Calls)
			return nil
		}
		in.Records += b.Calls
		d := time.Duration(b.BucketUS) * time.Microsecond
		counted := b.Calls - b.Censored
		for reason, n := range b.Excluded {
			g.Excluded[reason] += n
			counted -= n
		}
		if counted > 0 {
			g.Latency.RecordN(d, counted)
		}
		if b.Censored > 0 {
			g.Latency.RecordCensoredN(d, b.Censored)
		}
		return nil
	}, func(err error) error {
		return badRecord(err, &o, in)
	})
}

// bucketCell adds one row of buckets to its window's cell of g, whose
// set keeps windows: a row of arrivals to the cell holding its second, a
// row of buckets to the cell of its window_start (the untimed cell when
// its calls have no time). window counts the windows, and refuses one
// more than the cap.
func bucketCell(b *ingest.BucketRow, g *histogram.Group, name string, in *report.Input, window func(int64) error) error {
	if b.Arrivals {
		c := g.Cell(time.Unix(b.Second, 0))
		if err := window(c.Start); err != nil {
			return err
		}
		c.Arrive(b.Second, b.Calls)
		return nil
	}
	if !b.Windowed {
		return fmt.Errorf("%s: HDR buckets carry no times, which windows and interval histograms need: analyze them without %s, do not summarize them (tunetimeout clickhouse %s has ClickHouse compute them by window, in a %s column)",
			name, usage.Window, usage.Window, ingest.BucketsWindowColumn)
	}
	at := time.Time{} // the untimed cell
	if b.Timed {
		at = time.Unix(b.Window, 0)
	}
	// Into the window of --window holding the row's: an answer of
	// shorter windows that divide it merges into it, as summaries do.
	c := g.Cell(at)
	if b.Timed {
		if err := window(c.Start); err != nil {
			return err
		}
	}
	in.Records += b.Calls
	d := time.Duration(b.BucketUS) * time.Microsecond
	counted := b.Calls - b.Censored
	for reason, n := range b.Excluded {
		if c.Excluded == nil {
			c.Excluded = map[string]int64{}
		}
		c.Excluded[reason] += n
		counted -= n
	}
	c.RecordN(d, counted)
	c.RecordCensoredN(d, b.Censored)
	return nil
}
