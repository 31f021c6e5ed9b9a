// Package analysis runs the whole job behind `tunetimeout analyze`: it reads
// the inputs, groups the samples into histograms, recommends a timeout per
// group, applies Little's law and builds the report. It sits at the right end
// of the pipeline and imports every package to its left.
package analysis

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// ErrNothingToAnalyse is returned (wrapped) when no input sample could be used.
var ErrNothingToAnalyse = errors.New("nothing to analyse")

// DefaultMaxGroups is how many groups an analysis keeps apart by default.
const DefaultMaxGroups = 200

// Options are everything a user chooses for one analysis.
type Options struct {
	Inputs     []string // file names or globs; "-" is standard input
	Format     string   // input format name (ingest.FormatNames); "" = auto
	Ingest     ingest.Options
	Status     ingest.StatusRule
	Strict     bool // a bad record is fatal
	ShowErrors int  // how many bad records to quote in the report; default 5
	MaxGroups  int  // groups kept apart, the rest folded into "other"; 0 = DefaultMaxGroups, < 0 = no limit

	Recommend  recommend.Options
	Rate       float64         // calls per second from the user; 0 = measure from timestamps
	Pool       int             // 0 = unknown
	Candidates []time.Duration // nil = the default ladder around the recommendation
	// MoreCandidates join the candidates, whichever they are (watch
	// --timeout: the timeouts configured, beside the ladder).
	MoreCandidates []time.Duration

	// Policy is the call policy fitted to the caller's deadline; the zero
	// value is one attempt at the recommended timeout.
	Policy recommend.PolicyOptions
	// Simulate configures the policy's replay, which runs when a deadline
	// or retries are asked for, or always with AlwaysSimulate.
	Simulate       simulate.Options
	AlwaysSimulate bool
	// Herd asks for the herd scenario (simulate.RunHerd); zero: none.
	Herd advice.HerdOptions
	// Loop asks for the closed loop under a trigger; zero: none.
	Loop advice.LoopOptions
	// Window, when not 0, analyses each group window by window too
	// (whole seconds, at least one): the worst window's recommendation is
	// the group's unless WindowForAll (advice.Windows). Without Window,
	// inputs that are all interval logs are analysed at their own
	// interval (logWindow) unless NoWindows. WindowOptions say how the
	// windows are ranked and pooled by hour (--for, --window-precision,
	// --profile, --tz).
	Window    time.Duration
	NoWindows bool
	advice.WindowOptions

	// Plan, with a Policy.Deadline and spans grouped by caller and
	// callee, fits each edge's policy to the chain's plan: the time its
	// calls have left of the deadline, and retries at one layer only,
	// PlanOutermost or PlanInnermost (plan.go); "" = no plan.
	Plan string

	// Progress, when set, follows the reading of the inputs.
	Progress Progress

	// Workers is how many goroutines decode the inputs at once, each
	// taking chunks of whole lines; 0 = runtime.GOMAXPROCS(0), one per
	// core. The report does not depend on it.
	Workers int
	// chunkSize is the size of those chunks; 0 = ingest.DefaultChunkSize.
	chunkSize int

	// From and To keep the calls of [From, To) alone; zero: no bound.
	// Interval logs are kept or left out an interval at a time, by its
	// start (see readLog).
	From, To time.Time
	// every > 0 keeps each group's samples per interval of that length
	// too (histogram.Set.Every), for Summarize.
	every time.Duration
	// spools, when set, are read in the place of Inputs, each under its
	// source's name (inputs; RunJaeger, RunClickHouse).
	spools []input
}

// Progress follows the reading of the inputs (internal/progress draws it
// on a terminal). Begin is called once with the inputs' size in bytes (< 0
// when unknown: standard input from a pipe); Read with the bytes read from
// the inputs as stored, compressed ones for .gz and .zst, so that they
// add up to that size; Records with the records read so far; End when the
// reading is over, perhaps more than once.
type Progress interface {
	Begin(totalBytes int64)
	Read(n int)
	Records(n int64)
	End()
}

// Run analyses the inputs and returns the report. stdin is read for "-".
func Run(ctx context.Context, o Options, stdin io.Reader) (*report.Report, error) {
	o.defaults()
	fromLogs := false
	if o.Window == 0 && !o.NoWindows {
		o.Window = logWindow(o)
		fromLogs = o.Window > 0
	}
	if o.Window > 0 {
		o.every = o.Window // cells per window, collapsed into totals below
	}
	set, metrics, in, err := readAll(ctx, o, stdin)
	if err != nil {
		return nil, err
	}
	if metrics != nil {
		return runOTLPMetrics(ctx, o, metrics, in)
	}
	set, windows := set.Collapse()
	windows = windowsToAnalyse(windows, o, fromLogs, &in)
	r := &report.Report{Input: in}
	noteFolded(&r.Input, set, o)
	groups := set.Groups()
	var used, total int64
	for _, g := range groups {
		used += g.Latency.Count()
		total += g.Latency.Count() + sum(g.Excluded)
	}
	if used == 0 {
		return nil, nothingToAnalyse(r.Input, groups, o)
	}
	if o.Rate > 0 && len(groups) > 1 {
		r.Input.Note(finding.Newf(finding.RateShared, finding.Fields{"rate_per_second": o.Rate, "groups": len(groups)},
			"The %s of %s calls/s is shared among the groups by their share of the calls read.", usage.Rate, human.Number(o.Rate)))
	}
	var herdStep string
	if o.Herd.Asked() {
		// The herd first: the backoff it needs is the policies'.
		var crowd simulate.HerdAdvice
		if r.Herd, crowd, err = runHerd(ctx, o, groups); err != nil {
			return nil, err
		}
		if herdStep, err = sizeBackoff(&o, crowd); err != nil {
			return nil, err
		}
	}
	graph := len(o.Ingest.By) == 0 && edgeFormats(r.Input.Formats)
	plan, budgets, err := readPlan(ctx, o, stdin, groups, graph)
	if err != nil {
		return nil, err
	}
	var hangs []littleslaw.Result
	var simGroups map[string]chainSimGroup
	if r.Groups, hangs, simGroups, err = fitGroups(ctx, groups, windows, o, total, herdStep, plan, &r.Input); err != nil {
		return nil, err
	}
	r.SharedPool = advice.NewSharedPool(o.Pool, hangs)
	if graph {
		r.CallGraph = report.NewCallGraph(r.Groups)
	}
	if r.CallGraph != nil {
		if err := completeCallGraph(ctx, r, o, stdin, budgets, plan, simGroups); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// windowsToAnalyse returns the groups' windows to analyse, nil for none:
// the calls must fall in two windows at least. It adds to in a note of
// why there are none when a window was asked for, or that every input is
// an interval log analysed at its interval when the window is theirs
// (fromLogs).
func windowsToAnalyse(windows map[string]histogram.Windows, o Options, fromLogs bool, in *report.Input) map[string]histogram.Windows {
	if n := windowCount(windows); windows != nil && n < 2 {
		// One window, the whole period, or none: nothing to compare.
		if !fromLogs {
			msg := fmt.Sprintf("The calls fall in a single window of %s (%s): the report has no windows to compare.", human.Duration(o.Window), usage.Window)
			if n == 0 {
				msg = fmt.Sprintf("No call has a time: the report has no windows (%s needs the calls' times).", usage.Window)
			}
			in.Note(finding.New(finding.OneWindow, finding.Fields{"window_seconds": o.Window.Seconds(), "windows": n}, msg))
		}
		in.Drop(finding.StraddlingIntervals) // of windows not listed
		windows, fromLogs = nil, false
	}
	if fromLogs {
		in.Note(finding.Newf(finding.LogWindows, finding.Fields{"window_seconds": o.Window.Seconds()},
			"Every input is an interval log: each window of %s, their interval, is analysed too, as with %s %s (%s sets another length, %s 0 none).",
			human.Duration(o.Window), usage.Window, human.Duration(o.Window), usage.Window, usage.Window))
	}
	return windows
}

// noteFolded adds to in a note of the calls folded into histogram.Other,
// when there were more groups than o.MaxGroups.
func noteFolded(in *report.Input, set *histogram.Set, o Options) {
	samples, groups := set.Folded()
	if samples == 0 {
		return
	}
	from := human.Count(int64(groups))
	if set.FoldedAtLeast() { // a count of distinct names is bounded (histogram.Set)
		from = "at least " + from
	}
	in.Note(finding.Newf(finding.GroupsFolded, finding.Fields{"calls": samples, "groups": groups,
		"groups_at_least": set.FoldedAtLeast(), "into": histogram.Other, "max_groups": o.MaxGroups},
		"%s calls from %s more groups are folded into %q: only %d groups are kept apart (%s).",
		human.Count(samples), from, histogram.Other, o.MaxGroups, usage.MaxGroups))
}

// readPlan checks the chain's plan, o.Plan, and reads the chain's budgets
// it needs before the groups are fitted; nil and nil without a plan.
// graph is whether the inputs are spans grouped by caller and callee.
func readPlan(ctx context.Context, o Options, stdin io.Reader, groups []*histogram.Group, graph bool) (*chainPlan, *budgetCounter, error) {
	if o.Plan == "" {
		return nil, nil, nil
	}
	if o.Plan != PlanOutermost && o.Plan != PlanInnermost {
		return nil, nil, fmt.Errorf("a plan keeps its retries at the %s or the %s layer, not %q", PlanOutermost, PlanInnermost, o.Plan)
	}
	if o.Policy.Deadline <= 0 {
		return nil, nil, fmt.Errorf("a plan of the chain needs the root's deadline (%s)", usage.Deadline)
	}
	if !graph {
		return nil, nil, fmt.Errorf("a plan of the chain needs spans (otlp, zipkin, jaeger) grouped by caller and callee (no %s)", usage.By)
	}
	budgets, err := readBudgets(ctx, o, stdin)
	if err != nil {
		return nil, nil, err
	}
	return newChainPlan(groupNames(groups), budgets, o), budgets, nil
}

// fitGroups analyses each group that has a call usable for latency (its
// windows too, when there are) and returns the report's groups, in the
// groups' order, with their hangs (Little's law); it adds to in a note
// of each group left out. total is all groups' calls, excluded ones too, to
// share a --rate by. herdStep, when not "", is the herd's step to the
// policies' backoff (sizeBackoff). A plan fits the edges into a service
// before the edges out of it (chainPlan.order), each edge under its part
// of the deadline, and the returned map holds what the chain's simulation
// needs of each group.
func fitGroups(ctx context.Context, groups []*histogram.Group, windows map[string]histogram.Windows, o Options, total int64, herdStep string, plan *chainPlan, in *report.Input) ([]report.Group, []littleslaw.Result, map[string]chainSimGroup, error) {
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	if plan != nil {
		order = plan.order(groupNames(groups))
	}
	fittedGroups := make([]*report.Group, len(groups))
	simGroups := map[string]chainSimGroup{}
	fittedHangs := make([]*littleslaw.Result, len(groups))
	for _, gi := range order {
		g := groups[gi]
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		if g.Latency.Count() == 0 {
			in.Note(finding.Newf(finding.GroupEmpty, finding.Fields{"group": g.Name, "excluded": maps.Clone(g.Excluded)},
				"Group %q has no call usable for latency (%s); it is left out.", g.Name, describe(g.Excluded)))
			continue
		}
		share := float64(g.Latency.Count()+sum(g.Excluded)) / float64(total)
		og, planStep := o, ""
		if plan != nil {
			og, planStep = plan.apply(g.Name, o)
		}
		res, err := analyseGroup(ctx, g, og, share, nil)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("group %q: %w", g.Name, err)
		}
		rg := advice.NewGroup(res)
		if windows != nil {
			if rg, err = advice.Windows(ctx, rg, g, windows[g.Name], o.Window, o.WindowOptions, o.Recommend,
				func(ctx context.Context, wg *histogram.Group) (advice.Result, error) {
					return analyseGroup(ctx, wg, o, share, nil)
				}); err != nil {
				return nil, nil, nil, err
			}
		}
		if herdStep != "" && rg.Policy != nil {
			rg.Policy.Steps = append(rg.Policy.Steps, report.Step{Rule: "herd", Seconds: o.Policy.BackoffBase.Seconds(), Reason: herdStep})
		}
		if planStep != "" && rg.Policy != nil {
			rg.Policy.Steps = append(rg.Policy.Steps, report.Step{Rule: "plan", Seconds: og.Policy.Deadline.Seconds(), Reason: planStep})
		}
		if plan != nil {
			plan.fitted(g.Name, res.Policy)
			simGroups[g.Name] = chainSimGroup{latency: g.Latency, policy: res.Policy, timeout: res.Recommendation.Timeout}
		}
		fittedGroups[gi], fittedHangs[gi] = &rg, &res.LittlesLaw
	}
	out := []report.Group{}
	var hangs []littleslaw.Result
	for i := range groups {
		if fittedGroups[i] != nil {
			out = append(out, *fittedGroups[i])
			hangs = append(hangs, *fittedHangs[i])
		}
	}
	return out, hangs, simGroups, nil
}

// completeCallGraph checks the call graph's deadlines and attempts
// (callGraphChecks) and applies the chain's budgets to it, reading them
// when no plan read them first; with a plan it adds the plan and its
// simulation over the fitted groups.
func completeCallGraph(ctx context.Context, r *report.Report, o Options, stdin io.Reader, budgets *budgetCounter, plan *chainPlan, simGroups map[string]chainSimGroup) error {
	if err := callGraphChecks(ctx, r.CallGraph, o, stdin); err != nil {
		return err
	}
	if budgets == nil {
		var err error
		if budgets, err = readBudgets(ctx, o, stdin); err != nil {
			return err
		}
	}
	applyBudgets(r.CallGraph, budgets, o, minUsefulTries(r.Groups))
	if plan != nil {
		r.CallGraph.Plan = plan.report()
		var err error
		if r.CallGraph.Plan.Simulation, err = simulateChain(ctx, r.CallGraph, simGroups, budgets, o); err != nil {
			return err
		}
	}
	if slices.Contains(o.Inputs, "-") {
		r.Input.Note(finding.New(finding.StdinReadOnce, nil, "Standard input is read once: the spans read from it are not checked for a deadline that did not reach the callee, nor counted for attempts per call (that needs a second read; give the spans as a file)."))
	}
	return nil
}

// windowCount is how many windows the groups have, all groups' together:
// 0, 1, or 2 for more.
func windowCount(windows map[string]histogram.Windows) int {
	first, seen := int64(0), false
	for _, w := range windows {
		for _, start := range w.Starts {
			if seen && start != first {
				return 2
			}
			first, seen = start, true
		}
	}
	if seen {
		return 1
	}
	return 0
}

// groupNames is the groups' names, in their order.
func groupNames(groups []*histogram.Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.Name
	}
	return out
}

// edgeFormats reports whether every input was read by a format whose
// groups are call-graph edges by default (ingest.Format.Edges).
func edgeFormats(names []string) bool {
	for _, n := range names {
		f, ok := ingest.Lookup(n)
		if !ok || !f.Edges {
			return false
		}
	}
	return len(names) > 0
}

func (o *Options) defaults() {
	if len(o.Inputs) == 0 {
		o.Inputs = []string{"-"}
	}
	if o.ShowErrors == 0 {
		o.ShowErrors = 5
	}
	if o.MaxGroups == 0 {
		o.MaxGroups = DefaultMaxGroups
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
}

// read reads every input into one set: samples of logs and CSV, histograms
// of interval logs. Inputs of bucketed histograms (OTLP metrics) are
// refused: only analyze reads them (readAll).
func read(ctx context.Context, o Options, stdin io.Reader) (*histogram.Set, report.Input, error) {
	set, metrics, in, err := readAll(ctx, o, stdin)
	if err == nil && metrics != nil {
		err = fmt.Errorf("%s: OTLP metrics hold histograms, not calls: only analyze reads them", strings.Join(in.Files, ", "))
	}
	return set, in, err
}

// readAll is read, with the histograms of OTLP metrics inputs apart (nil
// without any). Metrics and calls do not mix: an analysis reads one or the
// other.
func readAll(ctx context.Context, o Options, stdin io.Reader) (*histogram.Set, *otlpMetrics, report.Input, error) {
	o.defaults()
	inputs, err := o.inputs()
	if err != nil {
		return nil, nil, report.Input{}, err
	}
	files := make([]string, len(inputs))
	for i, f := range inputs {
		files[i] = f.name
	}
	in := report.Input{Files: files, BadExamples: []string{}, Notes: []string{}, Findings: []report.Finding{}}
	set := o.newSet()
	set.Limit(o.MaxGroups)
	if o.Progress != nil {
		o.Progress.Begin(inputSize(inputs, stdin))
		defer o.Progress.End()
	}
	var par *parallel
	if o.Workers > 1 {
		par = newParallel(o.Workers, o.MaxGroups, o.newSet)
	}
	logs := newLogState()
	for _, f := range inputs {
		if err := readAny(ctx, f, o, stdin, set, par, logs, &in); err != nil {
			return nil, nil, in, err
		}
	}
	if par != nil {
		all := par.set()
		all.Merge(set) // what interval logs held
		set = all
	}
	logs.finish(set, o, &in)
	if len(in.NotRequests) > 0 {
		var total int64
		kinds := slices.Sorted(maps.Keys(in.NotRequests))
		slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(in.NotRequests[b], in.NotRequests[a]) })
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			total += in.NotRequests[k]
			parts[i] = human.Count(in.NotRequests[k]) + " " + k
		}
		what := "lines are not requests but the server's own messages"
		if total == 1 {
			what = "line is not a request but the server's own message"
		}
		in.Note(finding.Newf(finding.NotRequests, finding.Fields{"lines": total, "kinds": maps.Clone(in.NotRequests)},
			"%s %s (%s); skipped.", human.Count(total), what, strings.Join(parts, ", ")))
	}
	if in.TimesOutOfRange > 0 {
		what := "records have a time"
		if in.TimesOutOfRange == 1 {
			what = "record has a time"
		}
		in.Note(finding.Newf(finding.TimesOutOfRange, finding.Fields{"records": in.TimesOutOfRange, "first": logs.timeExample},
			"%s %s outside 1970 to 2262 (the first: %s); their latency is used, their time is not: rates are measured from the other records.",
			human.Count(in.TimesOutOfRange), what, logs.timeExample))
	}
	if in.OutsideRange > 0 {
		in.Note(finding.Newf(finding.OutsideWindow, finding.Fields{"calls": in.OutsideRange, "from": rfc3339(o.From), "to": rfc3339(o.To)},
			"%s calls outside %s are left out.", human.Count(in.OutsideRange), describeRange(o.From, o.To)))
	}
	if logs.metrics != nil && len(set.Groups()) > 0 {
		return nil, nil, in, fmt.Errorf("%s: OTLP metrics hold histograms, the other inputs calls: analyse them apart", strings.Join(in.Files, ", "))
	}
	return set, logs.metrics, in, nil
}

// newSet returns an empty set that keeps intervals when o asks for them.
func (o Options) newSet() *histogram.Set {
	s := histogram.NewSet()
	if o.every > 0 {
		s.Every(o.every)
	}
	return s
}

// inRange reports whether a call at t lies in [From, To); without bounds,
// every call does, and with one, a call without a time does not.
func (o *Options) inRange(t time.Time) bool {
	if o.From.IsZero() && o.To.IsZero() {
		return true
	}
	return !t.IsZero() && (o.From.IsZero() || !t.Before(o.From)) && (o.To.IsZero() || t.Before(o.To))
}

// rfc3339 is t for a finding's field: nil for the zero time (no bound).
func rfc3339(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// describeRange says [from, to) for people.
func describeRange(from, to time.Time) string {
	switch {
	case from.IsZero() && to.IsZero():
		return fmt.Sprintf("the %s/%s of the summaries", usage.From, usage.To)
	case to.IsZero():
		return usage.From.String() + " " + from.UTC().Format(time.RFC3339)
	case from.IsZero():
		return usage.To.String() + " " + to.UTC().Format(time.RFC3339)
	}
	return usage.From.String() + " " + from.UTC().Format(time.RFC3339) + " " + usage.To.String() + " " + to.UTC().Format(time.RFC3339)
}

// readAny reads one input: an interval log into set, samples into set or
// the parallel workers' sets.
func readAny(ctx context.Context, input input, o Options, stdin io.Reader, set *histogram.Set, par *parallel, logs *logState, in *report.Input) error {
	name := input.name
	rc, err := open(input, stdin, o.Progress)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, r, err := ingest.Detect(o.Format, bufio.NewReaderSize(rc, 64<<10), name, o.Ingest)
	if err != nil {
		return cutOff(rc, err)
	}
	if !slices.Contains(in.Formats, f.Name) {
		in.Formats = append(in.Formats, f.Name)
	}
	records := in.Records
	var ex extras
	switch {
	case f.Histograms:
		err = readLog(ctx, name, r, o, set, logs, in)
	case f.HDRBuckets:
		err = readBuckets(ctx, name, r, o, set, logs, in)
	case f.Bucketed:
		if logs.metrics == nil {
			logs.metrics = &otlpMetrics{set: promsource.NewOTLPSet()}
		}
		err = readOTLPMetrics(ctx, name, r, o, logs.metrics, in)
	case par != nil:
		o.Format = f.Name
		err = par.read(ctx, name, r, o, in)
		ex = par.extras
	default:
		o.Format = f.Name
		err = readInput(ctx, name, r, o, set, in, &ex)
	}
	if err != nil {
		if t := ingest.Truncated(rc); t != nil && o.Strict {
			// The reading ended at the cut (a partial entry there): the
			// cut is the reason to tell.
			return fmt.Errorf("%w (%s)", t, usage.Strict)
		}
		return cutOff(rc, err)
	}
	logs.extras(name, ex)
	return truncated(ingest.Truncated(rc), f.Histograms, in.Records-records, o, in)
}

// cutOff returns err, or the truncation behind it when a compressed input
// cut off before its first whole line reads as an empty one.
func cutOff(rc io.ReadCloser, err error) error {
	if t := ingest.Truncated(rc); t != nil && errors.Is(err, ingest.ErrEmptyInput) {
		return fmt.Errorf("%w; nothing whole was read before the cut", t)
	}
	return err
}

// truncated reports a compressed input that ended early: a note with the
// complete records read from it and its cut-off last line counted bad, or
// for an interval log (whose records are its calls) the intervals read and
// the line dropped; under --strict, an error.
func truncated(t *ingest.TruncatedError, histograms bool, complete int64, o Options, in *report.Input) error {
	if t == nil {
		return nil
	}
	if o.Strict {
		return fmt.Errorf("%w (%s)", t, usage.Strict)
	}
	read, partial := human.Count(complete)+" complete records were read from it", "; its cut-off last line is counted bad"
	switch {
	case histograms:
		read, partial = "the intervals before the cut are read", ", its cut-off last line is dropped"
	case t.Partial:
		in.Records++
		in.BadRecords++
		if len(in.BadExamples) < o.ShowErrors {
			in.BadExamples = append(in.BadExamples, fmt.Sprintf("%s: the last line is cut off (the %s stream ends early)", t.Name, t.Format))
		}
	}
	if !t.Partial {
		partial = ""
	}
	fields := finding.Fields{"file": t.Name, "format": t.Format, "complete_records": complete, "partial_line": t.Partial, "interval_log": histograms}
	if histograms {
		fields["complete_records"] = nil // unknown: the intervals before the cut are read
	}
	in.Note(finding.Newf(finding.InputCutOff, fields, "%s: the %s stream ends early (the file is cut off): %s%s.", t.Name, t.Format, read, partial))
	return nil
}

// extras is what reading one input gives besides samples and counts.
type extras struct {
	timeExample string   // the first time out of range (dropOddTime), as read
	notes       []string // the decoder's (ingest.Noter)
}

// readInput decodes one input into set, counting records and bad records.
func readInput(ctx context.Context, name string, r io.Reader, o Options, set *histogram.Set, in *report.Input, ex *extras) error {
	dec, err := ingest.NewDecoder(o.Format, r, name, o.Ingest)
	if err != nil {
		return err
	}
	defer func() {
		if n, ok := dec.(ingest.Noter); ok {
			ex.notes = n.Notes()
		}
	}()
	d := drain{in: in, o: &o, every: everyRecords, progress: true}
	return drainInto(ctx, d, dec, func(s ingest.Sample) error {
		if o.counted(&s, in, &ex.timeExample) {
			add(set.Group(groupName(s.Group)), &o.Status, s)
		}
		return nil
	})
}

// The times a record may have: from the Unix epoch to the last instant
// time.Duration reaches from it (2262-04-11). A time outside was misread
// or mistyped (a year 2300, a 0001-01-01 zero value): kept, it would
// stretch the span a rate is measured over by centuries.
var (
	minTime = time.Unix(0, 0)
	maxTime = time.Unix(0, math.MaxInt64)
)

// dropOddTime takes the time off s when it lies outside [minTime,
// maxTime], counting it in n and keeping the first as example.
func dropOddTime(s *ingest.Sample, n *int64, example *string) {
	if s.Time.IsZero() || !s.Time.Before(minTime) && !s.Time.After(maxTime) {
		return
	}
	*n++
	if *example == "" {
		*example = s.Time.UTC().Format(time.RFC3339Nano)
	}
	s.Time = time.Time{}
}

// add files one sample under its group.
func add(g *histogram.Group, rule *ingest.StatusRule, s ingest.Sample) {
	if g.KeepsCells() {
		// A summary: the interval's cell is all that is written.
		addCell(g.Cell(s.Time), rule, s)
		return
	}
	g.AddMethod(s.Method)
	if !s.Time.IsZero() {
		g.Arrivals.Add(s.Time)
	}
	if s.ConnectKnown {
		g.RecordConnect(s.Connect)
	}
	if reason := rule.Classify(&s); reason != "" {
		g.Excluded[reason]++
		return
	}
	if s.Censored {
		g.Latency.RecordCensored(s.Latency)
	} else {
		g.Latency.Record(s.Latency)
	}
}

// addCell files one sample in its interval's cell, as add does in the
// group's totals.
func addCell(c *histogram.Cell, rule *ingest.StatusRule, s ingest.Sample) {
	c.AddMethod(s.Method)
	if !s.Time.IsZero() {
		c.Arrive(s.Time.Unix(), 1)
	}
	if s.ConnectKnown {
		c.RecordConnect(s.Connect)
	}
	if reason := rule.Classify(&s); reason != "" {
		c.Exclude(reason)
		return
	}
	if s.Censored {
		c.RecordCensored(s.Latency)
	} else {
		c.Record(s.Latency)
	}
}

func groupName(g string) string {
	if g == "" {
		return "all"
	}
	return g
}

// analyseGroup recommends a timeout for one group and applies Little's law
// (advice.Analyse), with the options of the command line and the request
// method in the group's name. share is the group's share of all calls,
// used to split a --rate. quantile, when not nil, answers the quantiles in
// place of g.Latency's (bucketed data: recommend.Measured.Quantile).
func analyseGroup(ctx context.Context, g *histogram.Group, o Options, share float64, quantile func(float64) time.Duration) (advice.Result, error) {
	po := o.Policy
	po.Method = methodOf(g.Name, o.Ingest.By)
	return advice.Analyse(ctx, g, advice.Options{Recommend: o.Recommend, Rate: o.Rate, Pool: o.Pool, Candidates: o.Candidates,
		MoreCandidates: o.MoreCandidates, Policy: po, Simulate: o.Simulate, AlwaysSimulate: o.AlwaysSimulate, Loop: o.Loop}, share, quantile)
}

// methodOf returns the request method in a group's name, "" when the
// grouping has none (names.Key.Method).
func methodOf(name string, by []string) string {
	return groupname.ParseKey(name, by).Method()
}

// nothingToAnalyse explains why no sample could be used.
func nothingToAnalyse(in report.Input, groups []*histogram.Group, o Options) error {
	excluded := map[string]int64{}
	for _, g := range groups {
		for k, v := range g.Excluded {
			excluded[k] += v
		}
		if below, above := g.Latency.OutOfRange(); below+above > 0 {
			excluded["out of the histogram's range"] += below + above
		}
	}
	switch {
	case in.Records == 0:
		return fmt.Errorf("%w: the input holds no records", ErrNothingToAnalyse)
	case len(groups) == 0 && in.OutsideRange > 0:
		return fmt.Errorf("%w: all %s records that could be read lie outside %s", ErrNothingToAnalyse,
			human.Count(in.OutsideRange), describeRange(o.From, o.To))
	case in.BadRecords == in.Records:
		first := ""
		if len(in.BadExamples) > 0 {
			first = "; first: " + in.BadExamples[0]
		}
		return fmt.Errorf("%w: all %s records are bad%s", ErrNothingToAnalyse, human.Count(in.Records), first)
	default:
		return fmt.Errorf("%w: none of %s records counts for latency (%s); %s keeps error responses",
			ErrNothingToAnalyse, human.Count(in.Records), describe(excluded), usage.IncludeErrors)
	}
}

func describe(m map[string]int64) string {
	if len(m) == 0 {
		return "no reason recorded"
	}
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %s", human.Count(m[k]), k)
	}
	return s
}

func sum(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}

// addNotRequests counts n lines that are not requests, of one kind.
func addNotRequests(in *report.Input, reason string, n int64) {
	if in.NotRequests == nil {
		in.NotRequests = map[string]int64{}
	}
	in.NotRequests[reason] += n
}
