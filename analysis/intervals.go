package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/report"
)

// Interval logs: `tunetimeout summarize` writes one histogram per group and
// interval (package histogram's WriteLog), `analyze` reads them back and
// merges them by group. HDR histograms, counts and per-second arrivals add
// up exactly, so the report over the summaries of several hosts is the
// report over all their raw logs.

// trailer is what a summary says of its input as a whole, in its last
// line: what the report over the raw logs shows besides the groups.
type trailer struct {
	Tool         string   `json:"tool"`
	Files        []string `json:"files"`
	Records      int64    `json:"records"`
	BadRecords   int64    `json:"bad_records"`
	BadExamples  []string `json:"bad_examples"`
	OutsideRange int64    `json:"outside_range,omitempty"`
	FoldedCalls  int64    `json:"folded_calls,omitempty"`
	FoldedGroups []string `json:"folded_groups,omitempty"`
	Notes        []string `json:"notes,omitempty"`
}

// DefaultInterval is the interval of a summary unless told otherwise.
const DefaultInterval = time.Minute

// Summarize reads the inputs as Run does and writes to w, instead of a
// report, an interval log of each group's samples per interval of length
// every (whole seconds, at least one): tunetimeout's HdrHistogram log,
// which `analyze` reads and merges with others. It returns what it read.
func Summarize(ctx context.Context, o Options, every time.Duration, stdin io.Reader, w io.Writer) (report.Input, error) {
	if every < time.Second || every%time.Second != 0 {
		return report.Input{}, fmt.Errorf("--interval %s: want whole seconds, at least 1s", every)
	}
	o.every = every
	set, in, err := read(ctx, o, stdin)
	if err != nil {
		return in, err
	}
	t := trailer{Tool: "tunetimeout summarize", Files: in.Files, Records: in.Records, BadRecords: in.BadRecords,
		BadExamples: in.BadExamples, OutsideRange: in.OutsideRange, Notes: in.Notes}
	t.FoldedCalls, _ = set.Folded()
	t.FoldedGroups = set.FoldedNames()
	if err := histogram.WriteLog(w, set, t); err != nil {
		return in, err
	}
	if in.Records == 0 {
		return in, fmt.Errorf("%w: the input holds no records", ErrNothingToAnalyse)
	}
	return in, nil
}

// logState gathers, over the interval logs of one run, what turns into
// rates and notes once all are read.
type logState struct {
	// spans holds, per group, the intervals of logs other tools wrote:
	// their calls give the rates (their logs have no arrivals).
	spans map[string]*span
	// units lists the foreign logs read with an assumed unit; coarse those
	// with fewer significant digits than ours.
	foreign []string
	coarse  int
	own     int
	folded  int64
}

// span is what the intervals of one group say of its rate.
type span struct {
	calls        int64
	first, last  float64 // the earliest start and latest end, Unix seconds
	peak         float64 // calls per second of the busiest interval
	peakInterval float64 // its length
}

func newLogState() *logState { return &logState{spans: map[string]*span{}} }

// readLog reads one interval log into set: each interval's histograms,
// exclusions and arrivals join its group's (the tag; "all" without one).
// With --from/--to an interval is kept when its start lies in the range:
// a log cannot be cut finer than its intervals, so bounds on interval
// starts give the same calls as on the raw logs. A line that cannot be
// read is a bad record, as a bad line of a log is.
func readLog(ctx context.Context, name string, r io.Reader, o Options, set *histogram.Set, logs *logState, in *report.Input) error {
	lr := histogram.NewLogReader(r, name)
	if o.Ingest.Unit > 0 {
		lr.Unit = o.Ingest.Unit
	}
	entries := 0
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *ingest.ParseError
			if !errors.As(err, &pe) {
				return err
			}
			in.Records++
			in.BadRecords++
			if o.Strict {
				return fmt.Errorf("%w (--strict)", err)
			}
			if len(in.BadExamples) < o.ShowErrors {
				in.BadExamples = append(in.BadExamples, pe.Error())
			}
			continue
		}
		if e.Input != nil {
			if err := addTrailer(e.Input, set, o, in); err != nil {
				return fmt.Errorf("%s:%d: %w", name, e.Line, err)
			}
			continue
		}
		entries++
		c := e.Cell
		if !lr.Own() {
			in.Records += c.Count()
		}
		var at time.Time
		if !e.Untimed {
			at = time.Unix(0, int64(e.Start*1e9))
		}
		if !o.inRange(at) {
			in.OutsideRange += c.Count()
			continue
		}
		g := set.Group(groupName(e.Tag))
		g.AddCell(c)
		if !lr.Own() {
			logs.interval(g.Name, e, c.Count())
			if e.Digits < histogram.Digits {
				logs.coarse++
			}
		}
	}
	if entries == 0 && in.Records == 0 {
		return fmt.Errorf("%s: %w", name, ingest.ErrEmptyInput)
	}
	if lr.Own() {
		logs.own++
	} else {
		logs.foreign = append(logs.foreign, name)
		in.Notes = append(in.Notes, fmt.Sprintf(
			"%s is an interval log another tool wrote: its values are read as %s each (--unit; the format does not say), its rates come from its intervals' counts.",
			name, human.Duration(lr.Unit)))
	}
	return nil
}

// addTrailer adds what a summary says of its input to the run's.
func addTrailer(raw json.RawMessage, set *histogram.Set, o Options, in *report.Input) error {
	var t trailer
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("the summary's input line is not valid: %w", err)
	}
	if t.Records < 0 || t.BadRecords < 0 || t.OutsideRange < 0 || t.FoldedCalls < 0 {
		return errors.New("the summary's input line has a negative count")
	}
	in.Records += t.Records
	in.BadRecords += t.BadRecords
	in.OutsideRange += t.OutsideRange
	for _, e := range t.BadExamples {
		if len(in.BadExamples) < o.ShowErrors {
			in.BadExamples = append(in.BadExamples, e)
		}
	}
	set.AddFolded(t.FoldedCalls, t.FoldedGroups)
	return nil
}

// interval takes one interval of a foreign log for group's rate.
func (l *logState) interval(group string, e histogram.LogEntry, calls int64) {
	if e.Untimed {
		return
	}
	s := l.spans[group]
	if s == nil {
		s = &span{first: math.Inf(1), last: math.Inf(-1)}
		l.spans[group] = s
	}
	s.calls += calls
	s.first = min(s.first, e.Start)
	s.last = max(s.last, e.Start+e.Length)
	if e.Length >= 1 {
		if r := float64(calls) / e.Length; r > s.peak {
			s.peak, s.peakInterval = r, e.Length
		}
	}
}

// finish gives the groups of foreign logs their rates, from their
// intervals' counts, and says what the reading assumed.
func (l *logState) finish(set *histogram.Set, o Options, in *report.Input) {
	for _, g := range set.Groups() {
		s := l.spans[g.Name]
		if s == nil || g.Arrivals.Count() > 0 || s.last-s.first < 2 {
			continue
		}
		g.Measured = &histogram.Measured{
			Rate:     float64(s.calls) / (s.last - s.first),
			PeakRate: s.peak,
			Source:   "interval counts",
		}
	}
	if l.coarse > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf(
			"%s intervals hold histograms with fewer than %d significant digits: their values are read at the top of their coarser buckets.",
			human.Count(int64(l.coarse)), histogram.Digits))
	}
}
