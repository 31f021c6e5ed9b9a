package analysis

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
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
	Tool            string           `json:"tool"`
	Files           []string         `json:"files"`
	Records         int64            `json:"records"`
	BadRecords      int64            `json:"bad_records"`
	BadExamples     []string         `json:"bad_examples"`
	OutsideRange    int64            `json:"outside_range,omitempty"`
	NotRequests     map[string]int64 `json:"not_requests,omitempty"`
	TimesOutOfRange int64            `json:"times_out_of_range,omitempty"`
	FoldedCalls     int64            `json:"folded_calls,omitempty"`
	FoldedGroups    []string         `json:"folded_groups,omitempty"`
	// FoldedAtLeast: FoldedGroups is not every folded group (there were
	// more than the set remembers, or the list was cut to keep the line
	// readable).
	FoldedAtLeast bool     `json:"folded_at_least,omitempty"`
	Notes         []string `json:"notes,omitempty"`
}

// DefaultInterval is the interval of a summary unless told otherwise.
const DefaultInterval = time.Minute

// A summary of at least sparseCells intervals of groups with fewer than
// sparseCalls calls each on average gets a note: it is not much smaller
// than its log.
const (
	sparseCells = 1000
	sparseCalls = 50
)

// Summarize reads the inputs as Run does and writes to w, instead of a
// report, an interval log of each group's samples per interval of length
// every (whole seconds, at least one): tunetimeout's HdrHistogram log,
// which `analyze` reads and merges with others. It returns what it read.
func Summarize(ctx context.Context, o Options, every time.Duration, stdin io.Reader, w io.Writer) (report.Input, error) {
	if every < time.Second || every%time.Second != 0 {
		return report.Input{}, usage.About(usage.Interval, fmt.Errorf("%s %s: want whole seconds, at least 1s", usage.Interval, every))
	}
	o.every = every
	set, in, err := read(ctx, o, stdin)
	if err != nil {
		return in, err
	}
	t := trailer{Tool: "tunetimeout summarize", Files: in.Files, Records: in.Records, BadRecords: in.BadRecords,
		BadExamples: in.BadExamples, OutsideRange: in.OutsideRange, NotRequests: in.NotRequests,
		TimesOutOfRange: in.TimesOutOfRange, Notes: in.Notes}
	t.FoldedCalls, _ = set.Folded()
	t.FoldedGroups, t.FoldedAtLeast = trailerNames(set.FoldedNames())
	t.FoldedAtLeast = t.FoldedAtLeast || set.FoldedAtLeast()
	if in.Records == 0 {
		return in, fmt.Errorf("%w: the input holds no records", ErrNothingToAnalyse)
	}
	var cells, calls int64
	for _, g := range set.Groups() {
		g.EachCell(func(c *histogram.Cell) {
			cells++
			calls += c.Count()
		})
	}
	if cells >= sparseCells && calls < sparseCalls*cells {
		// Each cell costs a histogram line of about 100 bytes and its
		// comment: with few calls in each, the summary is no smaller
		// than the log.
		in.Note(finding.Newf(finding.SparseSummary, finding.Fields{"intervals": cells, "mean_calls": float64(calls) / float64(cells), "suggested_interval_seconds": 10 * every},
			"%s intervals of groups hold %s on average: a summary this sparse is hardly smaller than its log; a longer %s (%s, 1h) makes it smaller.",
			human.Count(cells), human.NumberOf(float64(calls)/float64(cells), "call"), usage.Interval, human.Duration(10*every)))
	}
	return in, histogram.WriteLog(w, set, t)
}

// logState gathers, over the interval logs of one run, what turns into
// rates and notes once all are read.
type logState struct {
	// spans holds, per group, the intervals of logs other tools wrote:
	// their calls give the rates (their logs have no arrivals).
	spans map[string][]span
	// coarse counts the intervals of histograms with fewer significant
	// digits than ours.
	coarse     int
	flagsNoted bool // the note that reading flags do not apply is given
	// timeExample is the first time out of range, with its input.
	timeExample string
	// notes are the decoders' notes, each with the inputs that gave it.
	notes     map[string][]string
	noteOrder []string
	// metrics holds the OTLP metrics inputs' histograms; nil until one
	// is read.
	metrics *otlpMetrics
	// straddling counts the intervals that straddle two windows, the
	// first of them in straddleExample.
	straddling      int64
	straddleExample string
	// bucketWindows are the windows HDR buckets filled, all inputs' and
	// groups' together, up to sqlsource.MaxWindows (readBuckets).
	bucketWindows map[int64]struct{}
}

// extras takes what reading the input name gave besides samples.
func (l *logState) extras(name string, ex extras) {
	if l.timeExample == "" && ex.timeExample != "" {
		l.timeExample = ex.timeExample + " in " + name
	}
	for _, n := range ex.notes {
		if l.notes == nil {
			l.notes = map[string][]string{}
		}
		if _, ok := l.notes[n]; !ok {
			l.noteOrder = append(l.noteOrder, n)
		}
		l.notes[n] = append(l.notes[n], name)
	}
}

// span is one interval of a foreign log: its start and length in seconds
// and its calls.
type span struct {
	start, length float64
	calls         int64
}

func newLogState() *logState { return &logState{spans: map[string][]span{}} }

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
	// own is what this tool's cells held, the records when the log lost
	// its trailer (a summary cut off); trailer says whether it had one.
	var own int64
	trailer := false
	d := drain{in: in, o: &o, every: everyIntervals}
	err := drainInto(ctx, d, lr, func(e histogram.LogEntry) error {
		if e.Input != nil {
			trailer = true
			if err := addTrailer(e.Input, set, o, in); err != nil {
				return fmt.Errorf("%s:%d: %w", name, e.Line, err)
			}
			return nil
		}
		entries++
		if e.OldGo {
			in.Note(finding.Newf(finding.OldHdrHistogramGo, finding.Fields{"file": name},
				"%s was written by hdrhistogram-go before v1.3.0, which put times in milliseconds and the interval's end in place of its length: its times are read as such.", name))
		}
		c := e.Cell
		if !lr.Own() {
			in.Records += c.Count()
		} else {
			own += c.Count()
		}
		var at time.Time
		if !e.Untimed {
			at = time.Unix(0, int64(e.Start*1e9))
		}
		if !o.inRange(at) {
			in.OutsideRange += c.Count()
			return nil
		}
		// A summary of summaries: each interval must fall in one of the
		// new ones (a millisecond of slack for other tools' times). The
		// windows of an analysis take one that straddles two in the
		// window of its start, and say so.
		if every := o.every.Seconds(); every > 0 && !e.Untimed && math.Floor((e.Start+e.Length-1e-3)/every) > math.Floor(e.Start/every) {
			at := time.Unix(0, int64(e.Start*1e9)).UTC().Format(time.RFC3339Nano)
			switch {
			case o.Window == 0:
				return fmt.Errorf("%s:%d: an interval of %s from %s does not fit in one of %s %s: summaries merge into longer intervals, not shorter",
					name, e.Line, human.Seconds(e.Length), at, usage.Interval, o.every)
			case lr.Own():
				// Ours would be moved whole into the window of its start,
				// its seconds beyond that window's end.
				return fmt.Errorf("%s:%d: an interval of %s from %s does not fit in one window of %s %s: a summary's windows are whole multiples of its interval",
					name, e.Line, human.Seconds(e.Length), at, usage.Window, human.Duration(o.Window))
			}
			if logs.straddling++; logs.straddleExample == "" {
				logs.straddleExample = fmt.Sprintf("%s:%d: %s from %s", name, e.Line, human.Seconds(e.Length), at)
			}
		}
		g := set.Group(groupName(e.Tag))
		g.AddCell(c)
		if !lr.Own() {
			logs.interval(g.Name, e, c.Count())
			if e.Digits < histogram.Digits {
				logs.coarse++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if lr.Own() && !trailer {
		// No trailer to say what was read: the calls the cells hold.
		in.Records += own
	}
	if entries == 0 && in.Records == 0 {
		return fmt.Errorf("%s: %w", name, ingest.ErrEmptyInput)
	}
	if !logs.flagsNoted && (len(o.Ingest.By) > 0 || o.Ingest.Latency != "" || o.Status.IncludeErrors ||
		o.Ingest.LogFormat != "" || o.Ingest.NginxConf != "") {
		logs.flagsNoted = true
		in.Note(finding.Newf(finding.FlagsNotForIntervalLogs, nil, "%s, %s, %s and the log format do not apply to interval logs: their groups, latency and status rule were set when they were written.",
			usage.By, usage.Latency, usage.IncludeErrors))
	}
	if !lr.Own() {
		in.Note(finding.Newf(finding.ForeignIntervalLog, finding.Fields{"file": name, "unit_seconds": lr.Unit},
			"%s is an interval log another tool wrote: its values are read as %s each (%s; the format does not say), its rates come from its intervals' counts.",
			name, human.Duration(lr.Unit), usage.Unit))
	}
	return nil
}

// addTrailer adds what a summary says of its input to the run's.
func addTrailer(raw json.RawMessage, set *histogram.Set, o Options, in *report.Input) error {
	var t trailer
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("the summary's input line is not valid: %w", err)
	}
	negative := t.Records < 0 || t.BadRecords < 0 || t.OutsideRange < 0 || t.FoldedCalls < 0 || t.TimesOutOfRange < 0
	for _, n := range t.NotRequests {
		negative = negative || n < 0
	}
	if negative {
		return errors.New("the summary's input line has a negative count")
	}
	addCounts(in, &report.Input{Records: t.Records, BadRecords: t.BadRecords, BadExamples: t.BadExamples,
		OutsideRange: t.OutsideRange, NotRequests: t.NotRequests, TimesOutOfRange: t.TimesOutOfRange}, o.ShowErrors)
	set.AddFolded(t.FoldedCalls, t.FoldedGroups, t.FoldedAtLeast)
	return nil
}

// interval takes one interval of a foreign log for group's rate.
func (l *logState) interval(group string, e histogram.LogEntry, calls int64) {
	if !e.Untimed {
		l.spans[group] = append(l.spans[group], span{e.Start, e.Length, calls})
	}
}

// finish gives the groups of foreign logs their rates, from their
// intervals' counts, and says what the reading assumed.
func (l *logState) finish(set *histogram.Set, o Options, in *report.Input) {
	for _, g := range set.Groups() {
		if spans := l.spans[g.Name]; len(spans) > 0 && !hasArrivals(g) {
			g.Measured = intervalRates(spans)
		}
	}
	for _, n := range l.noteOrder {
		// The same note of the inputs of one glob, told once.
		names := l.notes[n]
		who := strings.Join(names, ", ")
		if len(names) > 3 {
			who = fmt.Sprintf("%s and %d more inputs", strings.Join(names[:2], ", "), len(names)-2)
		}
		in.Note(finding.New(finding.DecoderNote, finding.Fields{"inputs": names, "note": n}, who+": "+n))
	}
	if l.straddling > 0 {
		in.Note(finding.Newf(finding.StraddlingIntervals, finding.Fields{"intervals": l.straddling, "window_seconds": o.Window.Seconds(), "example": l.straddleExample},
			"%s intervals of the interval logs straddle two windows of %s (the first: %s): each is counted in the window its start lies in, so the windows are as exact as the intervals are long.",
			human.Count(l.straddling), human.Duration(o.Window), l.straddleExample))
	}
	if l.coarse > 0 {
		in.Note(finding.Newf(finding.CoarseHistograms, finding.Fields{"intervals": l.coarse, "digits": histogram.Digits},
			"%s intervals hold histograms with fewer than %d significant digits: their values are read at the top of their coarser buckets.",
			human.Count(int64(l.coarse)), histogram.Digits))
	}
}

// hasArrivals reports whether g counted arrivals second by second, in
// its totals or in its cells.
func hasArrivals(g *histogram.Group) bool {
	if !g.KeepsCells() {
		return g.Arrivals != nil && g.Arrivals.Count() > 0
	}
	found := false
	g.EachCell(func(c *histogram.Cell) { found = found || len(c.Calls) > 0 })
	return found
}

// intervalRates measures a group's rates from its intervals: the mean over
// the time from the first start to the last end, the peak over the busiest
// minute made of whole intervals (or the busiest interval when intervals
// are a minute or longer). nil when the intervals span less than 2 s.
func intervalRates(spans []span) *histogram.Measured {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	first, last := spans[0].start, spans[0].start+spans[0].length
	var calls int64
	for _, s := range spans {
		last = max(last, s.start+s.length)
		calls += s.calls
	}
	if last-first < 2 {
		return nil
	}
	m := &histogram.Measured{Rate: float64(calls) / (last - first), Source: "interval counts"}
	const minute = 60.0
	if last-first <= minute {
		m.PeakRate = m.Rate
		return m
	}
	var sum int64 // calls of spans[i:j] shorter than a minute
	j := 0
	for i, s := range spans {
		if j < i {
			j, sum = i, 0
		}
		// The window [s.start, s.start+minute) takes the intervals that end in it.
		for j < len(spans) && spans[j].start+spans[j].length <= s.start+minute {
			if spans[j].length < minute {
				sum += spans[j].calls
			}
			j++
		}
		if s.length >= minute {
			m.PeakRate = max(m.PeakRate, float64(s.calls)/s.length)
			continue
		}
		m.PeakRate = max(m.PeakRate, float64(sum)/minute)
		if j > i {
			sum -= s.calls
		}
	}
	return m
}

// maxTrailerNames bounds the JSON of the folded groups' names a summary's
// trailer lists, well within the line cap of the interval-log reader (4
// MiB): a summary must read back.
const maxTrailerNames = 2 << 20

// trailerNames returns the first of names whose JSON fits maxTrailerNames,
// and whether that is fewer than all.
func trailerNames(names []string) ([]string, bool) {
	size := 0
	for i, n := range names {
		b, _ := json.Marshal(n)
		if size += len(b) + 1; size > maxTrailerNames {
			return names[:i], true
		}
	}
	return names, false
}

// logWindow is the window of an analysis without --window whose every
// input is an interval log: the logs' own interval (the longest, when they
// differ), so that the report of summaries has the windows the raw logs
// have at that --window. tunetimeout's logs say their interval in their
// first line, and each must divide the window (else their intervals would
// straddle windows: no default); the logs of other tools, which say none,
// give their first interval's length in whole seconds. 0 when an input is
// not a regular file (standard input, a pipe: read once, and the reading
// proper needs all of it), is not an interval log or cannot be read (the
// reading proper says why).
func logWindow(o Options) time.Duration {
	inputs, err := o.inputs()
	if err != nil {
		return 0
	}
	var longest time.Duration
	var own []time.Duration
	for _, in := range inputs {
		if fi, err := os.Stat(in.path); in.path == "-" || err != nil || !fi.Mode().IsRegular() {
			return 0
		}
		d, isOwn, ok := logInterval(in, o)
		if !ok {
			return 0
		}
		if isOwn && d > 0 {
			own = append(own, d)
		}
		longest = max(longest, d)
	}
	for _, d := range own {
		if longest%d != 0 {
			return 0
		}
	}
	return longest
}

// maxLogWindow bounds a window taken from another tool's interval length.
const maxLogWindow = 366 * 24 * time.Hour

// logInterval reads the start of the input name: whether it is an
// interval log, tunetimeout's own or not, and its interval (0 when it has
// no timed one).
func logInterval(in input, o Options) (d time.Duration, own, ok bool) {
	name := in.name
	rc, err := open(in, nil, nil)
	if err != nil {
		return 0, false, false
	}
	defer rc.Close()
	f, r, err := ingest.Detect(o.Format, bufio.NewReaderSize(rc, 64<<10), name, o.Ingest)
	if err != nil || !f.Histograms {
		return 0, false, false
	}
	lr := histogram.NewLogReader(r, name)
	// The first entries: a bad line is the reading proper's to report.
	for range 64 {
		e, err := lr.Next()
		if err == io.EOF {
			return lr.Interval(), lr.Own(), true
		}
		switch {
		case err != nil || e.Input != nil:
		case lr.Own():
			return lr.Interval(), true, true
		case !e.Untimed:
			if e.Length*float64(time.Second) > float64(maxLogWindow) {
				return 0, false, true // no window of its length
			}
			return max(time.Second, time.Duration(math.Round(e.Length))*time.Second), false, true
		}
	}
	return lr.Interval(), lr.Own(), true
}
