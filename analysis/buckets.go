package analysis

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/report"
)

// readBuckets reads HDR buckets a SQL engine computed (ingest's buckets
// format) into set: each row's calls at its bucket's lowest value, which
// the histogram keeps of any value in the bucket, so the histograms are
// those a read of the rows one by one fills. The rows carry no times:
// --from and --to were the query's. Rows of arrivals (tunetimeout sql
// --arrivals) give the rates, as the calls' times give them in a local
// read; without them, rates come from --rate.
//
// Rows of the group the engine folded the groups beyond --max-groups into
// go to histogram.Other, counted as folded, with the number of groups the
// engine folded (the same on every such row of one answer).
func readBuckets(ctx context.Context, name string, r io.Reader, o Options, set *histogram.Set, in *report.Input) error {
	foldedGroups := int64(0)
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
			return errors.New(name + ": HDR buckets carry no times, which windows and interval histograms need: analyze them without --window, do not summarize them")
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
