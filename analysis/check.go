package analysis

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
	"github.com/tunetimeout/tunetimeout/source"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// CheckOptions are the options of `tunetimeout check`: the data, read as
// analyze reads it (Options), and the configs to hold against it.
type CheckOptions struct {
	Options
	// Configs are the config files; "-" is standard input (then the data
	// cannot be).
	Configs []string
	// ConfigFormat names the target every config is read as (a snippet
	// target that reads configs); "" detects each file's.
	ConfigFormat string
	// Map sends a config object (its name, as the check lists it) to a
	// group, over the matching by route.
	Map map[string]string
	// DatacenterConnect is the longest connect timeout that is reasonable
	// inside one datacenter; 0 = 1 s.
	DatacenterConnect time.Duration
	// Report, when set, is where the data come from instead of
	// Options.Inputs: a report analyze wrote with -o json, whose
	// distribution and candidates bracket the shares a timeout cuts off.
	Report *report.Report
	// Prometheus, when set, is where the data come from instead of
	// Options.Inputs: a histogram over its window (the whole window: a
	// config holds in every step of it), read bucket by bucket.
	Prometheus *PrometheusOptions
	// Source, when set, is where the data come from instead of
	// Options.Inputs (sourceGroups): any source analyze reads.
	Source source.Source
	// Chain says the configs are the layers of one call chain, the
	// caller's first: their retries multiply (TT-CHECK-RETRY-LAYERS).
	// Without it configs are not assumed to call one another.
	Chain bool
	// Topology, when set, says which configs are which hop of which call
	// chain (--topology): the retries of the configs along each of its
	// paths multiply, and no others. Its configs are read with Configs.
	Topology *Topology
}

// MaxConfigBytes is the largest config file check reads, includes
// included: budget.MaxFileBytes, as for the nginx config of --nginx-conf.
const MaxConfigBytes = budget.MaxFileBytes

// Check reads the data and the configs and returns what the configs'
// timeouts and retries cost on the data (report.Check).
func Check(ctx context.Context, o CheckOptions, stdin io.Reader) (*report.Check, error) {
	if f, ok := o.Source.(*source.Files); ok {
		o.useFiles(f)
	}
	if slices.Contains(o.Configs, "-") && slices.Contains(o.Inputs, "-") {
		return nil, fmt.Errorf("standard input can hold the configs or the data, not both")
	}
	if o.Topology != nil {
		o.Configs = slices.Clone(o.Configs)
		for _, c := range o.Topology.Configs() {
			if !slices.Contains(o.Configs, c) {
				o.Configs = append(o.Configs, c)
			}
		}
	}
	objects, notes, err := readConfigs(o.Configs, o.ConfigFormat, stdin)
	if err != nil {
		return nil, err
	}
	o.defaults()
	groups, in, err := checkedGroups(ctx, o, stdin)
	if err != nil {
		return nil, err
	}
	c := &report.Check{Input: in, Configs: append([]string{}, o.Configs...), Findings: []report.CheckFinding{},
		UnmatchedConfig: []report.ConfigObject{}, UnmatchedGroups: []string{}, Notes: []string{}, NoteFindings: []report.Finding{}}
	for _, n := range notes {
		c.Note(n)
	}
	for _, ob := range objects {
		// What the reader saw and did not model, said where it stands.
		for _, n := range ob.Notes {
			c.Note(finding.Newf(finding.CheckConfigNote, finding.Fields{"file": ob.Pos.File, "line": ob.Pos.Line, "target": ob.Target, "object": ob.Name, "note": n},
				"%s: %s: %s", ob.Pos, ob.Name, n))
		}
	}
	names := slices.Sorted(maps.Keys(groups))
	served := servedGroups(objects, groups, names, o.Map)
	if o.Topology != nil {
		topologyServed(objects, served, groups, names, o.Map, o.Topology)
	}
	matched := checkServed(c, objects, served, groups, o)
	for _, n := range names {
		if !matched[n] {
			c.UnmatchedGroups = append(c.UnmatchedGroups, n)
		}
	}
	var layers []report.CheckFinding
	var note *finding.Finding
	if o.Topology != nil {
		layers = topologyLayerFindings(objects, served, o.Topology)
		layers = append(layers, topologyInversions(objects, served, o.Topology)...)
	} else {
		layers, note = layerFindings(objects, served, o.Configs, o.Chain)
	}
	c.Findings = append(c.Findings, layers...)
	if note != nil {
		c.Note(*note)
	}
	sort.SliceStable(c.Findings, func(i, j int) bool {
		a, b := c.Findings[i], c.Findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return c, nil
}

// checkedGroups are the groups check holds the configs against: a saved
// report's (o.Report), else those of the data (sourceGroups).
func checkedGroups(ctx context.Context, o CheckOptions, stdin io.Reader) (map[string]checkedGroup, report.Input, error) {
	if o.Report == nil {
		return sourceGroups(ctx, o, stdin)
	}
	groups, in := reportGroups(o.Report)
	if len(groups) == 0 {
		return nil, report.Input{}, fmt.Errorf("the report holds no group to check against")
	}
	return groups, in, nil
}

// checkServed holds each config object against the groups it serves
// (served, by the objects' order), adds the findings to c, and lists in
// c the objects that serve none and send to none (UnmatchedConfig). It
// returns the groups some object serves.
func checkServed(c *report.Check, objects []target.Object, served [][]string, groups map[string]checkedGroup, o CheckOptions) map[string]bool {
	upstreams := map[string]target.Object{}
	for _, ob := range objects {
		for _, k := range upstreamKeys(ob) {
			if _, ok := upstreams[ob.Target+"\x00"+k]; !ok {
				upstreams[ob.Target+"\x00"+k] = ob
			}
		}
	}
	matched := map[string]bool{}
	for i, ob := range objects {
		gs := served[i]
		if len(gs) == 0 {
			if !usedAsUpstream(ob, objects) {
				c.UnmatchedConfig = append(c.UnmatchedConfig, configObject(ob))
			}
			continue
		}
		// An object that serves several groups is held to the largest
		// need among them: a value that fits one group and cuts off
		// another is no fix.
		var need time.Duration
		for _, name := range gs {
			need = max(need, groups[name].perTryNeed())
		}
		var per []report.CheckFinding
		for _, name := range gs {
			matched[name] = true
			per = append(per, checkObject(ob, upstreamOf(ob, upstreams), groups[name], need, o)...)
		}
		c.Findings = append(c.Findings, onePerValue(per)...)
	}
	return matched
}

// checkedGroup is one group of the data as check holds configs against
// it: its name, its latency (nil for a saved report), its advice, and for
// bucketed data the buckets, which say only which bucket a timeout falls
// in.
type checkedGroup struct {
	name    string
	latency *histogram.Latency
	advice  groupAdvice
	buckets binned
	// method is the request method of the group's calls, "" when the
	// grouping has none: a config object that matches methods serves
	// only the groups of its methods.
	method string
}

// mayWrite reports whether the group's calls may include a method that is
// not idempotent: its method, else the methods its calls had in the data
// (as analyze decides whether to retry it, recommend.IdempotentFromMethods);
// true when the data do not say.
func (cg checkedGroup) mayWrite() bool {
	idem := func(m string) bool { return slices.Contains(recommend.IdempotentMethods, strings.ToUpper(m)) }
	if cg.method != "" {
		return !idem(cg.method)
	}
	ms := cg.advice.methods
	if len(ms) == 0 {
		return true
	}
	return slices.ContainsFunc(ms, func(m string) bool { return !idem(m) })
}

// perTryNeed is the timeout one attempt of the group needs: the
// recommendation, or the call policy's per-try timeout where the caller's
// deadline lowered it (a timeout longer than the caller waits is work done
// for nobody).
func (cg checkedGroup) perTryNeed() time.Duration {
	need := cg.advice.timeout
	if p := cg.advice.perTry; p > 0 && p < need {
		need = p
	}
	return need
}

// deadline is the caller's deadline over the group's calls: its call
// policy's, else --deadline; 0 when none is known.
func (cg checkedGroup) deadline(o CheckOptions) time.Duration {
	if d := cg.advice.deadline; d > 0 {
		return d
	}
	return o.Policy.Deadline
}

// allowedCutOff is the share of calls a timeout may cut off: the
// --false-timeouts asked for, or, where the caller's deadline forces a
// per-try timeout below the recommendation, what that deadline cuts off
// (above measures a share): no config can do better within it. The waits
// before a request (a connect) force nothing: a timer shortened for them
// cuts off calls the caller waits for (docs/check.md). why says so for the
// message.
func (cg checkedGroup) allowedCutOff(o CheckOptions, above func(time.Duration) float64) (allowed float64, why string) {
	allowed = o.Recommend.FalseTimeouts
	need := cg.perTryNeed()
	if need < cg.advice.timeout {
		if s := above(need); s > allowed {
			return s, fmt.Sprintf(" and than the deadline of %s forces (%s)", human.Seconds(cg.deadline(o).Seconds()), human.Percent(s))
		}
	}
	return allowed, ""
}

// binned is latency known by bins: the share above a timeout is bracketed
// (Above), exact only at some values; Calls counts the calls.
type binned interface {
	Above(seconds float64) (lo, hi float64, exact bool)
	Calls() float64
	// Advice says how to measure the share at a timeout these bins
	// bracket.
	Advice(seconds float64) string
}

// promBuckets are a Prometheus histogram's buckets; unit is what one unit
// of the metric lasts, in seconds: the bound to add is in that unit.
type promBuckets struct {
	*histogram.Bucketed
	unit float64
}

func (b promBuckets) Calls() float64 { return b.Count }

func (b promBuckets) Advice(seconds float64) string {
	return fmt.Sprintf("add a bucket bound le=%q (in the metric's unit) to measure it", promsource.FormatLE(seconds, b.unit))
}

// reportBins are the latency of a saved report: its distribution's bins
// (each sample binned within the histogram's precision, 0.1 %, of its
// value) and its candidates, whose shares are exact.
type reportBins struct {
	g report.Group
}

func (b reportBins) Calls() float64 { return float64(b.g.Samples) }

func (b reportBins) Above(seconds float64) (lo, hi float64, exact bool) {
	for _, c := range b.g.Candidates {
		if math.Abs(c.TimeoutSeconds-seconds) <= 1e-9*max(seconds, 1) {
			return c.CutOffFraction, c.CutOffFraction, true
		}
	}
	d := b.g.Distribution
	if d == nil || b.g.Samples == 0 {
		return 0, 1, false
	}
	var surely, maybe int64
	prev := d.LowestSeconds
	for _, bin := range d.Bins {
		switch {
		case prev >= seconds:
			surely += bin.Count
			maybe += bin.Count
		case bin.UpperSeconds*1.001 > seconds:
			maybe += bin.Count
		}
		prev = bin.UpperSeconds
	}
	n := float64(b.g.Samples)
	return float64(surely) / n, float64(maybe) / n, false
}

func (b reportBins) Advice(seconds float64) string {
	return fmt.Sprintf("check against the data themselves, or write the report with analyze %s %s", usage.Candidates, time.Duration(seconds*float64(time.Second)))
}

// fileGroups reads the data from files, as analyze does.
func fileGroups(ctx context.Context, o CheckOptions, stdin io.Reader) (map[string]checkedGroup, report.Input, error) {
	set, metrics, in, err := readAll(ctx, o.Options, stdin)
	if err != nil {
		return nil, in, err
	}
	if metrics != nil {
		return otlpCheckGroups(ctx, o, metrics, in)
	}
	groups := map[string]checkedGroup{}
	var total int64
	for _, g := range set.Groups() {
		total += g.Latency.Count() + sum(g.Excluded)
	}
	for _, g := range set.Groups() {
		if g.Latency.Count() == 0 {
			continue
		}
		res, err := analyseGroup(ctx, g, o.Options, float64(g.Latency.Count()+sum(g.Excluded))/float64(total), nil)
		if err != nil {
			return nil, in, fmt.Errorf("group %q: %w", g.Name, err)
		}
		groups[g.Name] = checkedGroup{name: g.Name, latency: g.Latency, advice: adviceOf(res), method: methodOf(g.Name, o.Ingest.By)}
	}
	if len(groups) == 0 {
		return nil, in, nothingToAnalyse(in, set.Groups(), o.Options)
	}
	return groups, in, nil
}

// reportGroups are the groups of a saved report: its recommendation, its
// rates and Little's law as the report gives them, its bins.
func reportGroups(r *report.Report) (map[string]checkedGroup, report.Input) {
	groups := map[string]checkedGroup{}
	for _, g := range r.Groups {
		method := ""
		if g.Policy != nil && g.Policy.Method != nil {
			method = *g.Policy.Method
		}
		groups[g.Name] = checkedGroup{name: g.Name, advice: savedAdvice(g), buckets: reportBins{g}, method: method}
	}
	return groups, r.Input
}

// prometheusGroups reads the data from a Prometheus-compatible server: per
// group the buckets over the whole window, and the analysis of their
// conservative reading (every call at its bucket's upper bound), as the
// prometheus command makes it.
func prometheusGroups(ctx context.Context, o CheckOptions) (map[string]checkedGroup, report.Input, error) {
	p := *o.Prometheus
	o.Ingest.By = p.Source.By
	p.Source.Quantile = 1 - o.Recommend.FalseTimeouts
	res, err := promsource.Fetch(ctx, p.Source)
	if err != nil {
		return nil, report.Input{}, err
	}
	in := report.Input{Files: []string{res.Metric + " at " + res.URL}, BadExamples: []string{}, Notes: []string{}, Findings: []report.Finding{}}
	if res.Kind == promsource.Summary {
		return nil, in, fmt.Errorf("%s is a summary: %w", res.Metric, ErrSummary)
	}
	return bucketCheckGroups(ctx, o, res, in)
}

// bucketCheckGroups are the groups of bucketed data (a Prometheus
// histogram, OTLP metrics), each analysed on the conservative reading of
// its buckets over the whole window, and checked bucket by bucket.
func bucketCheckGroups(ctx context.Context, o CheckOptions, res *promsource.Result, in report.Input) (map[string]checkedGroup, report.Input, error) {
	var total float64
	for _, g := range res.Groups {
		if g.Err == nil {
			total += g.Calls
		}
	}
	groups := map[string]checkedGroup{}
	for _, g := range res.Groups {
		if g.Err != nil {
			in.Note(finding.Newf(finding.GroupFailed, finding.Fields{"group": g.Name, "error": g.Err.Error()},
				"Group %q: %v; it is left out.", g.Name, g.Err))
			continue
		}
		hg, quantile := advice.BucketGroup(g, g.Overall)
		r, err := analyseGroup(ctx, hg, o.Options, g.Calls/total, quantile)
		if err != nil {
			return nil, in, fmt.Errorf("group %q: %w", g.Name, err)
		}
		in.Records += int64(math.Round(g.Calls))
		groups[g.Name] = checkedGroup{name: g.Name, latency: hg.Latency, advice: adviceOf(r), buckets: promBuckets{g.Overall, res.Unit.Seconds()}, method: methodOf(g.Name, o.Ingest.By)}
	}
	if len(groups) == 0 {
		return nil, in, fmt.Errorf("%s: no group could be read", in.Files[0])
	}
	return groups, in, nil
}

// readConfigs reads every config file with the target that detects it (or
// the one named), and returns their objects.
func readConfigs(files []string, format string, stdin io.Reader) ([]target.Object, []finding.Finding, error) {
	var named *target.Target
	if format != "" {
		t, err := targets.Lookup(format)
		if err != nil {
			return nil, nil, err
		}
		if !t.Reads() {
			return nil, nil, usage.About(usage.ConfigFormat, fmt.Errorf("%s %s: the %s target writes config but does not read it (readers: %s)", usage.ConfigFormat, format, format, strings.Join(readerNames(), ", ")))
		}
		named = &t
	}
	var all []target.Object
	var notes []finding.Finding
	// One budget for the run: every config, every include, and what they
	// decode to (internal/budget).
	spend := budget.New()
	for _, f := range files {
		data, err := readBounded(f, stdin)
		if err != nil {
			return nil, nil, err
		}
		if err := spend.Bytes(int64(len(data)), f); err != nil {
			return nil, nil, err
		}
		open := func(p string) ([]byte, error) { return openIncluded(p) }
		var readers []target.Target
		if named != nil {
			readers = []target.Target{*named}
		} else {
			for _, t := range targets.All {
				if t.Reads() && t.Detects(f, data) {
					readers = append(readers, t)
				}
			}
		}
		if len(readers) == 0 {
			return nil, nil, fmt.Errorf("%s: not a config any reader knows (readers: %s); name it with %s", f, strings.Join(readerNames(), ", "), usage.ConfigFormat)
		}
		n := 0
		for _, t := range readers {
			objs, err := t.ReadWithin(spend, f, data, open)
			if err != nil {
				return nil, nil, err
			}
			n += len(objs)
			all = append(all, objs...)
		}
		if n == 0 {
			var names []string
			for _, t := range readers {
				names = append(names, t.Name)
			}
			notes = append(notes, finding.Newf(finding.CheckNoPolicy, finding.Fields{"file": f, "targets": names},
				"%s: no timeout or retry policy found (read as %s).", f, targetNames(readers)))
		}
	}
	return all, notes, nil
}

func readerNames() []string {
	var out []string
	for _, t := range targets.All {
		if t.Reads() {
			out = append(out, t.Name)
		}
	}
	return out
}

func targetNames(ts []target.Target) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ", ")
}

// openIncluded is the target.Opener of check: a file a config includes,
// by the path its reader made of it (relative paths from where check
// runs), read whole and bounded, a regular file only (budget.OpenInclude);
// a directory is the names in it, one a line, a directory's with a final
// "/", for the globs of nginx includes.
func openIncluded(p string) ([]byte, error) {
	f, fi, err := budget.OpenInclude(p)
	if budget.IsNotIncludable(err) {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.IsDir() {
		return listIncluded(p)
	}
	return readAllBounded(p, f)
}

// listIncluded is a directory as openIncluded answers it: the names in
// it, one a line, a directory's with a final "/".
func listIncluded(p string) ([]byte, error) {
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var names strings.Builder
	for _, e := range entries {
		names.WriteString(e.Name())
		if isDir(filepath.Join(p, e.Name()), e) {
			names.WriteString("/")
		}
		names.WriteString("\n")
	}
	return []byte(names.String()), nil
}

// isDir says whether a directory's entry is a directory, following a
// symbolic link as glob(3) does.
func isDir(p string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// ReadConfigFile reads a config file as check reads it: whole, refusing
// one over MaxConfigBytes.
func ReadConfigFile(name string) ([]byte, error) { return readBounded(name, nil) }

// readBounded reads a config file whole, refusing one over MaxConfigBytes.
func readBounded(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return readAllBounded(name, r)
}

// readAllBounded reads the config file name from r, refusing one over
// MaxConfigBytes.
func readAllBounded(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%s: larger than %s: not a config file", name, human.Bytes(MaxConfigBytes))
	}
	return data, nil
}

// mapObject returns the groups an object applies to: the ones --map sends
// it to; else, when the data are not grouped by request path, every group
// (each group's calls go through it, as far as the data can tell); else
// the groups its rules select (path matches and, in the same rule, methods:
// an HAProxy backend's use_backend rules, rulesOf); else the gRPC methods
// its names select; else the group named like the object or its upstream,
// or whose object the target's snippet names so (target.Target.GroupsNamed:
// an HAProxy backend, a resilience4j instance, a gRPC method config written
// for a group that is no gRPC method).
func mapObject(ob target.Object, groups []string, explicit map[string]string, methodOf func(string) string) []string {
	if g, ok := explicit[ob.Name]; ok {
		if slices.Contains(groups, g) {
			return []string{g}
		}
		return nil
	}
	if upstreamKeys(ob) != nil {
		return nil // an upstream's settings are checked with its routes
	}
	var paths []target.Match
	for _, m := range ob.Matches {
		switch m.Kind {
		case target.MatchPrefix, target.MatchExact, target.MatchRegex:
			paths = append(paths, m)
		}
	}
	byPath := false
	for _, g := range groups {
		if groupPath(g) != "" {
			byPath = true
		}
	}
	var named []string
	if t, err := targets.Lookup(ob.Target); err == nil {
		named = t.GroupsNamed(ob, groups)
	}
	var out []string
	switch {
	case !byPath && (len(paths) > 0 || len(ob.Matches) == 0 || len(groups) == 1):
		if len(groups) == 1 {
			return groups
		}
		for _, g := range groups {
			if g == ob.Name || g == ob.Upstream || strings.HasSuffix(ob.Name, " "+g) || slices.Contains(named, g) {
				out = append(out, g)
			}
		}
	case hasRules(ob):
		for _, g := range groups {
			if p := groupPath(g); p != "" && firstRule(ob, p, methodOf(g)) > 0 {
				out = append(out, g)
			}
		}
	case len(paths) > 0:
		for _, g := range groups {
			if p := groupPath(g); p != "" && slices.ContainsFunc(paths, func(m target.Match) bool { return pathMatches(ob.Target, m, p) }) {
				out = append(out, g)
			}
		}
	case targetOf(ob).Precedence == target.MethodRank:
		for _, g := range groups {
			if grpcRank(ob, g, named) > 0 {
				out = append(out, g)
			}
		}
	default:
		for _, g := range groups {
			if g == ob.Name || g == ob.Upstream || slices.Contains(named, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// hasRules reports whether an object is reached by several numbered rules
// (target.Match.Rule), alternatives that its Router tries in order.
func hasRules(ob target.Object) bool {
	return slices.ContainsFunc(ob.Matches, func(m target.Match) bool { return m.Rule > 0 })
}

// firstRule returns the number of the first rule of ob that takes a request
// for path with method ("" when the grouping has none), 0 when none does.
// A rule holds when each kind of match in it holds: one of its paths (a
// rule without one takes every path) and one of its methods (idem); hosts
// are not in the data and hold.
func firstRule(ob target.Object, path, method string) int {
	rules := map[int][]target.Match{}
	for _, m := range ob.Matches {
		rules[m.Rule] = append(rules[m.Rule], m)
	}
	for _, n := range slices.Sorted(maps.Keys(rules)) {
		var paths, methods []target.Match
		for _, m := range rules[n] {
			switch m.Kind {
			case target.MatchPrefix, target.MatchExact, target.MatchRegex:
				paths = append(paths, m)
			case target.MatchMethod:
				methods = append(methods, m)
			}
		}
		pathOK := len(paths) == 0 || slices.ContainsFunc(paths, func(m target.Match) bool { return pathMatches(ob.Target, m, path) })
		methodOK := methodIn(methods, method)
		if pathOK && methodOK {
			return max(n, 1)
		}
	}
	return 0
}

// grpcRank says how a gRPC method config selects a group, as gRPC picks the
// method config of a call (grpc/grpc doc/service_config.md, "methodConfig":
// the entry that names the service and method, else the one that names the
// service alone; grpc-proto service_config.proto, MethodConfig.Name: an
// entry with neither is the default of every method): 3 when one of its
// names is the group's method ("/pkg.Service/Method" selected by
// {service: "pkg.Service", method: "Method"}, or the name the gRPC snippet
// gives the group), 2 when one is the group's service, 1 for the default
// ({}), 0 when it does not select it.
func grpcRank(ob target.Object, g string, named []string) int {
	if slices.Contains(named, g) {
		return 3
	}
	if len(ob.Matches) == 0 {
		return 1
	}
	svc, method, ok := grpcMethodOf(g)
	if !ok {
		return 0
	}
	rank := 0
	for _, m := range ob.Matches {
		switch {
		case m.Kind != target.MatchMethod:
		case m.Value == svc+"/"+method:
			rank = 3
		case m.Value == svc:
			rank = max(rank, 2)
		}
	}
	return rank
}

// grpcName is a protobuf full name: identifiers joined by dots.
var grpcName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// grpcMethodOf reads a group that is a gRPC full method name,
// "/pkg.Service/Method".
func grpcMethodOf(g string) (svc, method string, ok bool) {
	parts := strings.Split(groupPath(g), "/")
	if len(parts) != 3 || !grpcName.MatchString(parts[1]) || !grpcName.MatchString(parts[2]) || strings.Contains(parts[2], ".") {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// groupPath is the request path in a group's name ("GET /users/{id}":
// "/users/{id}"), "" when it has none (names.Key.Path).
func groupPath(g string) string {
	return groupname.ParseKey(g, nil).Path()
}

// pathMatches reports whether a group's path falls under a match. A group
// path may be a pattern ("/users/{id}"): its literal part decides a
// prefix, and a regex is tried on the pattern with the variable written
// as one segment.
func pathMatches(name string, m target.Match, path string) bool {
	concrete := regexp.MustCompile(`\{[^/}]*\}`).ReplaceAllString(path, "x")
	switch m.Kind {
	case target.MatchPrefix:
		if m.CaseInsensitive {
			return strings.HasPrefix(strings.ToLower(concrete), strings.ToLower(m.Value))
		}
		return strings.HasPrefix(concrete, m.Value)
	case target.MatchExact:
		return concrete == m.Value || path == m.Value
	case target.MatchRegex:
		// Envoy, Istio, Gateway API and Linkerd match the whole path;
		// nginx and HAProxy search within it (Target.RegexSearch).
		expr := m.Value
		if t, _ := targets.Lookup(name); !t.RegexSearch {
			expr = "^(?:" + expr + ")$"
		}
		if m.CaseInsensitive {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		return err == nil && re.MatchString(concrete)
	}
	return false
}

// upstreamKeys are the names routes send to an upstream-side object by
// (an Envoy cluster, an nginx upstream block, an Istio DestinationRule's
// host), nil for an object that is not one: its connect timeout and its
// limit of calls in flight count for the routes that send to it.
func upstreamKeys(ob target.Object) []string {
	if t := targetOf(ob); t.UpstreamKeys != nil {
		return t.UpstreamKeys(ob)
	}
	return nil
}

// targetOf is the target that read ob; the zero Target, which knows
// nothing of its configs, for a name no target has.
func targetOf(ob target.Object) target.Target {
	t, _ := targets.Lookup(ob.Target)
	return t
}

// upstreamOf returns the upstream-side object of the same target that ob
// sends to; the zero Object when there is none.
func upstreamOf(ob target.Object, upstreams map[string]target.Object) target.Object {
	if ob.Upstream == "" {
		return target.Object{}
	}
	for _, k := range []string{ob.Upstream, strings.SplitN(ob.Upstream, ".", 2)[0]} {
		if u, ok := upstreams[ob.Target+"\x00"+k]; ok {
			return u
		}
	}
	return target.Object{}
}

// usedAsUpstream reports whether ob is an upstream some route sends to: it
// is checked with them, not listed as unmatched.
func usedAsUpstream(ob target.Object, all []target.Object) bool {
	keys := upstreamKeys(ob)
	return len(keys) > 0 && slices.ContainsFunc(all, func(o target.Object) bool {
		return o.Target == ob.Target && (slices.Contains(keys, o.Upstream) || slices.Contains(keys, strings.SplitN(o.Upstream, ".", 2)[0]))
	})
}

// checkFinding is the one way a check finding is made: the finding f
// (its code, severity, message and numbers, as internal/finding made
// them) at pos, in the config object named object of the target targ,
// held against the data of group ("" when it is no one group's: the
// layers of a chain, a topology's hops).
func checkFinding(f finding.Finding, pos target.Pos, targ, object, group string) report.CheckFinding {
	return report.CheckFinding{Code: string(f.Code), Severity: string(f.Severity), File: pos.File, Line: pos.Line,
		Target: targ, Object: object, Group: group, Message: f.Message, Measured: f.Fields}
}

func configObject(ob target.Object) report.ConfigObject {
	return report.ConfigObject{File: ob.Pos.File, Line: ob.Pos.Line, Target: ob.Target, Kind: ob.Kind, Object: ob.Name}
}

// checkObject holds one config object, with the upstream it sends to
// (upstreamOf), against one group's data, reading it as its target enforces
// it (target.Object.Bounds): the model analyze fits a policy with. need is
// the largest per-try timeout any group the object serves needs: the value
// its fixes write.
func checkObject(ob, upstream target.Object, cg checkedGroup, need time.Duration, o CheckOptions) []report.CheckFinding {
	c := &objectCheck{ob: ob, upstream: upstream, cg: cg, o: o, b: ob.Bounds(), needed: need.Seconds()}
	// The timer that ends an attempt: the per-try timeout when it is below
	// the overall bound, else the timeout.
	c.timer = ob.Timeout
	if c.b.PerTryMatters() && ob.PerTryTimeout != nil {
		c.timer = ob.PerTryTimeout
	}
	_, _, c.hangWait, c.bounded = c.b.Hang()
	c.timeoutFindings()
	if c.b.Attempts > 1 {
		c.retryFindings()
	}
	c.hangFindings()
	c.connectTimeoutFindings()
	return c.out
}

// objectCheck is one config object held against one group's data
// (checkObject): what its findings are drawn from, and the findings so
// far.
type objectCheck struct {
	ob, upstream target.Object
	cg           checkedGroup
	o            CheckOptions
	b            recommend.Bounds // ob's, as its target enforces them
	// timer is the setting that ends an attempt (checkObject).
	timer *target.Setting[float64]
	// hangWait is how long a hang holds a call under b, when bounded.
	hangWait time.Duration
	bounded  bool
	// needed is the per-try timeout the object's fixes write, in seconds.
	needed float64
	out    []report.CheckFinding
}

// add appends a finding of the object at pos.
func (c *objectCheck) add(pos target.Pos, f finding.Finding) {
	c.out = append(c.out, checkFinding(f, pos, c.ob.Target, c.ob.Name, c.cg.name))
}

// fixLast sets the fix of the finding added last.
func (c *objectCheck) fixLast(fix *report.Fix) {
	c.out[len(c.out)-1].Fix = fix
}

// timeoutFindings says when no timeout bounds the call, when the timeout
// in force is the target's default, and what the timer cuts off of the
// group's calls (cutOffFindings).
func (c *objectCheck) timeoutFindings() {
	ob, timeout, timer, needed := c.ob, c.ob.Timeout, c.timer, c.needed
	switch {
	case !c.bounded:
		pos := ob.Pos
		raw, key := "", ""
		if timeout != nil {
			pos, raw = timeout.Pos, timeout.Raw
		}
		if timeout != nil && timeout.Default {
			key = fmt.Sprintf(" (%s's default: none)", ob.Target)
		} else if raw != "" {
			key = fmt.Sprintf(" (%s)", raw)
		}
		c.add(pos, finding.Newf(finding.CheckNoTimeout, finding.Fields{"recommended_seconds": needed},
			"no timeout bounds the call%s: a hang holds every call until the caller gives up, and the pool with it; %s is recommended",
			key, human.Seconds(needed)))
		if timeout != nil {
			c.fixLast(fixFor(ob, timeout, needed))
		}
	case timer != nil && timer.Value > 0:
		if timer.Default {
			c.add(timer.Pos, finding.Newf(finding.CheckDefaultTimeout, finding.Fields{"configured_seconds": timer.Value, "recommended_seconds": needed},
				"no timeout is set: %s's default of %s is in force, chosen by nobody for this service", ob.Target, human.Seconds(timer.Value)))
			c.fixLast(fixFor(ob, timer, needed))
		}
		what := "timeout"
		if timer == ob.PerTryTimeout {
			what = "per-try timeout"
		}
		confidence := c.o.Recommend.Confidence
		if confidence == 0 {
			confidence = 0.95
		}
		c.out = append(c.out, cutOffFindings(ob, timer, what, c.cg, c.cg.latency, c.cg.perTryNeed().Seconds(), needed, confidence, c.o)...)
	}
}

// retryFindings are those of an object that retries: attempts that do not
// fit the caller's deadline, retries of requests that are not idempotent,
// retries without jitter, and retries of a 500.
func (c *objectCheck) retryFindings() {
	ob, b, attempts := c.ob, c.b, c.b.Attempts
	if dl := c.cg.deadline(c.o); dl > 0 && b.Overall == 0 && b.StaticAttempts() > 1 {
		if worst := b.StaticWorstCase(); worst > dl+time.Millisecond {
			fit := b.AttemptsWithin(dl)
			each := human.Seconds(b.EffectivePerTry().Seconds())
			if before := b.BeforeSum(); before > 0 {
				each += fmt.Sprintf(" after up to %s before the request is sent", human.Seconds(before.Seconds()))
			}
			window := ""
			if b.RetryWindow > 0 {
				window = fmt.Sprintf(" (the last starting before %s)", human.Seconds(b.RetryWindow.Seconds()))
			}
			c.add(ob.Attempts.Pos, finding.Newf(finding.CheckAttemptsDontFit, finding.Fields{"attempts": attempts, "attempts_that_fit": fit,
				"per_try_seconds": b.EffectivePerTry().Seconds(), "before_request_seconds": b.BeforeSum().Seconds(), "worst_case_seconds": worst.Seconds(), "deadline_seconds": dl.Seconds()},
				"%d attempts%s of %s with waits up to %s take up to %s when each times out, more than the deadline of %s, and nothing in %s bounds them together: at most %d fit",
				b.StaticAttempts(), window, each, human.Seconds(b.Backoff.Cap.Seconds()), human.Seconds(worst.Seconds()), human.Seconds(dl.Seconds()), ob.Target, fit))
		}
	}
	if nonIdem := ob.RetryNonIdempotent; nonIdem != nil && nonIdem.Value && !ob.NeverSentOnly() && c.cg.mayWrite() {
		c.add(nonIdem.Pos, finding.Newf(finding.CheckRetryNonIdempotent, finding.Fields{"attempts": attempts},
			"non-idempotent requests (POST, PATCH) are retried after failures that may have been applied: a retried payment is charged twice (RFC 9110 section 9.2.2)"))
	}
	// nginx passes a failed request to the next server of the
	// upstream (proxy_next_upstream): a failover, not a return to the
	// server that failed, which is what jitter spreads out.
	if ob.Jitter == "none" && !ob.NeverSentOnly() && !targetOf(ob).RetriesFailOver {
		c.add(ob.Attempts.Pos, finding.Newf(finding.CheckNoJitter, finding.Fields{"attempts": attempts},
			"retries go at once, without backoff or jitter: when the dependency fails, every client retries in the same instant"))
	}
	if rc := ob.Retries500(); rc != "" {
		pos := ob.Attempts.Pos
		if ob.RetryOn != nil {
			pos = ob.RetryOn.Pos
		}
		c.add(pos, finding.Newf(finding.CheckRetry500, finding.Fields{"attempts": attempts, "condition": rc},
			"retry-on %s retries a 500: a deterministic bug returns it every time, so each such request costs %d calls for nothing, and a 500 may follow a request that was half applied", rc, attempts))
	}
}

// hangFindings holds a hang under the config's own bounds against the
// caller's pool (--pool), by Little's law at the peak rate, and a limit
// of calls in flight against normal demand. A limit the config sets
// below the pool (a bulkhead: Envoy max_requests) caps the hang there,
// and the pool survives.
func (c *objectCheck) hangFindings() {
	ob, b, a, pool := c.ob, c.b, c.cg.advice, c.o.Pool
	limit := firstSet(ob.MaxInFlight, c.upstream.MaxInFlight)
	if limit != nil && limit.Default {
		limit = nil
	}
	if c.bounded && c.hangWait > 0 && a.rateKnown && pool > 0 {
		in := littleslaw.Input{Rate: a.rate, PeakRate: a.peakRate, Pool: pool, MeanLatency: a.meanLatency, Timeout: c.hangWait, Attempts: 1}
		r := littleslaw.Analyze(in)
		if r.PoolExhausted && (limit == nil || limit.Value >= pool) {
			pos := ob.Pos
			if ob.Timeout != nil {
				pos = ob.Timeout.Pos
			}
			c.add(pos, finding.Newf(finding.CheckHangExhaustsPool, finding.Fields{"configured_seconds": c.hangWait.Seconds(), "rate_per_second": max(r.PeakRate, r.Rate),
				"pool": pool, "in_flight_during_hang": r.InFlightDuringHang, "seconds_to_exhaustion": r.SecondsToExhaustion, "recommended_seconds": c.needed},
				"during a hang, %s calls/s x %s (%s) = %s calls wait at once, %.1f x the pool of %s: the pool is exhausted %s s into the hang",
				human.Number(max(r.PeakRate, r.Rate)), human.Seconds(c.hangWait.Seconds()), hangWhat(ob, b), human.Number(r.InFlightDuringHang),
				r.InFlightDuringHang/float64(pool), human.Count(int64(pool)), human.Number(r.SecondsToExhaustion)))
			if c.timer != nil && c.needed < b.EffectivePerTry().Seconds()-1e-9 {
				c.fixLast(fixFor(ob, c.timer, c.needed))
			}
		}
	}
	if a.rateKnown {
		if m := limit; m != nil && m.Value < a.bulkhead {
			c.add(m.Pos, finding.Newf(finding.CheckBulkheadBelowDemand, finding.Fields{"max_in_flight": m.Value, "bulkhead": a.bulkhead, "in_flight_peak": a.inFlightPeak},
				"the limit of %d calls in flight is below normal demand: at the peak rate %s calls are in flight on average, and %d is the 99.9th percentile (Poisson), so calls are turned away on a normal day",
				m.Value, human.Number(a.inFlightPeak), a.bulkhead))
		}
	}
}

// connectTimeoutFindings holds the connect timeout, the route's own or its
// cluster's, to analyze's rule (recommend.ConnectTimeout): too long when
// above the longest it finds reasonable (the recommendation, or one lost
// SYN's 1.1 s) and above what a connect inside a datacenter needs (1 s).
func (c *objectCheck) connectTimeoutFindings() {
	a := c.cg.advice
	ct := firstSet(c.ob.ConnectTimeout, c.upstream.ConnectTimeout)
	ctLimit := c.o.DatacenterConnect
	if ctLimit == 0 {
		ctLimit = time.Second
	}
	ctLimit = max(ctLimit, a.connectTimeout, a.longestConnect)
	if ct == nil || !(ct.Value > ctLimit.Seconds()+0.0005) {
		return
	}
	f := finding.Fields{"configured_seconds": ct.Value, "limit_seconds": ctLimit.Seconds()}
	if rc := a.connectTimeout; rc > 0 {
		f["recommended_seconds"] = rc.Seconds()
	}
	c.add(ct.Pos, finding.Newf(finding.CheckConnectTimeoutLong, f,
		"the connect timeout is %s%s: inside a datacenter a connect takes a few round trips of a millisecond or less; above %s a dead host holds each call that long before the retry",
		human.Seconds(ct.Value), defaultSuffix(ct), human.Seconds(ctLimit.Seconds())))
	if rc := a.connectTimeout; rc > 0 {
		owner := c.ob
		if ct != c.ob.ConnectTimeout {
			owner = c.upstream
		}
		c.fixLast(fixFor(owner, ct, rc.Seconds()))
	}
}

// hangWhat says what a hang waits for under the object's bounds.
func hangWhat(ob target.Object, b recommend.Bounds) string {
	n, _, wait, _ := b.Hang()
	switch {
	case b.Overall > 0 && wait == b.Overall && n > 1:
		return fmt.Sprintf("the timeout over %d attempts", n)
	case b.Overall > 0 && wait == b.Overall:
		return "the timeout"
	case n > 1:
		return fmt.Sprintf("%d attempts of %s and the backoff between them", n, human.Seconds(b.EffectivePerTry().Seconds()))
	case b.Attempts > 1 && !b.RetriesTimeouts:
		return "one attempt: timeouts are not retried"
	}
	return "one attempt"
}

func defaultSuffix[T any](s *target.Setting[T]) string {
	if s.Default {
		return " (the default: none is set)"
	}
	return ""
}

func firstSet[T any](ss ...*target.Setting[T]) *target.Setting[T] {
	for _, s := range ss {
		if s != nil {
			return s
		}
	}
	return nil
}

// cutOffFindings holds one timeout against the group's latency: the share
// of calls it cuts off, with its confidence interval, against
// --false-timeouts.
func cutOffFindings(ob target.Object, t *target.Setting[float64], what string, cg checkedGroup, h *histogram.Latency, recommended, needed, confidence float64, o CheckOptions) []report.CheckFinding {
	if cg.buckets != nil {
		return bucketCutOffFindings(ob, t, what, cg, recommended, needed, o)
	}
	d := time.Duration(t.Value * float64(time.Second))
	n := h.Count()
	above := h.CountAbove(d)
	share := float64(above) / float64(n)
	allowed, why := cg.allowedCutOff(o, func(d time.Duration) float64 { return float64(h.CountAbove(d)) / float64(n) })
	lo, hi := wilson(above, n, confidence)
	fields := finding.Fields{"configured_seconds": t.Value, "cut_off_fraction": share, "cut_off_low_fraction": lo, "cut_off_high_fraction": hi,
		"calls": n, "calls_cut_off": above, "false_timeouts_fraction": o.Recommend.FalseTimeouts, "recommended_seconds": recommended}
	if a := cg.advice; a.rateKnown {
		fields["in_flight_during_hang"] = littleslaw.InFlight(max(a.peakRate, a.rate), d)
	}
	if ob.TimeoutIdle {
		what += " (between two reads: it cuts a call off while no byte arrives, so a response that streams may last longer)"
	}
	var f finding.Finding
	cuts := share > allowed*(1+1e-9)
	if cuts {
		f = finding.Newf(finding.CheckTimeoutCutsOff, fields,
			"the %s of %s cuts off %s of these calls (%s of %s; %s confidence: %s to %s), more than the %s asked for (%s)%s: %s would not",
			what, human.Seconds(t.Value), human.Percent(share), human.Count(above), human.Count(n), human.Percent(confidence),
			human.Percent(lo), human.Percent(hi), human.Percent(o.Recommend.FalseTimeouts), usage.FalseTimeouts, why, human.Seconds(needed))
	} else {
		f = finding.Newf(finding.CheckTimeoutFits, fields,
			"the %s of %s cuts off %s of these calls (%s of %s), within the %s asked for%s; the recommendation is %s",
			what, human.Seconds(t.Value), human.Percent(share), human.Count(above), human.Count(n), human.Percent(o.Recommend.FalseTimeouts), why, human.Seconds(recommended))
	}
	out := checkFinding(f, t.Pos, ob.Target, ob.Name, cg.name)
	if cuts {
		out.Fix = fixFor(ob, t, needed)
	}
	return []report.CheckFinding{out}
}

// fixFor is the edit that sets s, a value of ob, to seconds: the value
// replaced where ob itself sets it; a line added to ob where the value is
// a default or inherited from an enclosing block (nginx's http or server,
// HAProxy's defaults), so that nothing else changes with it. nil when the
// target has no literal for it, or where the edit would need the file's
// structure (a YAML key to add).
func fixFor(ob target.Object, s *target.Setting[float64], seconds float64) *report.Fix {
	t, err := targets.Lookup(ob.Target)
	if err != nil || s == nil {
		return nil
	}
	lit, ok := t.WriteDuration(time.Duration(math.Ceil(seconds*1000)) * time.Millisecond)
	if !ok {
		return nil
	}
	own := !s.Default && s.Raw != "" && s.Pos.File == ob.Pos.File && s.Pos.Line >= ob.Pos.Line
	switch {
	case own:
		return &report.Fix{File: s.Pos.File, Line: s.Pos.Line, Old: s.Raw, New: lit}
	case s.Key != "":
		if line, opens, ok := t.InsertSetting(s.Key, lit); ok {
			return &report.Fix{File: ob.Pos.File, Line: ob.Pos.Line, Insert: line, Opens: opens}
		}
	}
	return nil
}

// bucketCutOffFindings holds a timeout against bucketed data: the share
// it cuts off is exact only at a bucket bound; between two bounds the
// buckets bracket it, and the finding is the one both ends agree on, or
// none, beside TT-CHECK-NO-BUCKET-AT-TIMEOUT saying which bound to add.
func bucketCutOffFindings(ob target.Object, t *target.Setting[float64], what string, cg checkedGroup, recommended, needed float64, o CheckOptions) []report.CheckFinding {
	lo, hi, exact := cg.buckets.Above(t.Value)
	ft, why := cg.allowedCutOff(o, func(d time.Duration) float64 { _, hi, _ := cg.buckets.Above(d.Seconds()); return hi })
	fields := finding.Fields{"configured_seconds": t.Value, "cut_off_low_fraction": lo, "cut_off_high_fraction": hi,
		"calls": cg.buckets.Calls(), "false_timeouts_fraction": ft, "recommended_seconds": recommended}
	if exact {
		fields["cut_off_fraction"] = lo
	}
	if a := cg.advice; a.rateKnown {
		fields["in_flight_during_hang"] = littleslaw.InFlight(max(a.peakRate, a.rate), time.Duration(t.Value*float64(time.Second)))
	}
	share := human.Percent(lo)
	if !exact {
		share = "between " + human.Percent(lo) + " and " + human.Percent(hi)
	}
	var out []report.CheckFinding
	emit := func(f finding.Finding, fix bool) {
		cf := checkFinding(f, t.Pos, ob.Target, ob.Name, cg.name)
		if fix {
			cf.Fix = fixFor(ob, t, needed)
		}
		out = append(out, cf)
	}
	switch {
	case lo > ft:
		emit(finding.Newf(finding.CheckTimeoutCutsOff, fields,
			"the %s of %s cuts off %s of these %s calls, more than the %s asked for (%s)%s: %s would not",
			what, human.Seconds(t.Value), share, human.Number(cg.buckets.Calls()), human.Percent(ft), usage.FalseTimeouts, why, human.Seconds(needed)), true)
	case hi <= ft:
		emit(finding.Newf(finding.CheckTimeoutFits, fields,
			"the %s of %s cuts off %s of these %s calls, within the %s asked for; the recommendation is %s",
			what, human.Seconds(t.Value), share, human.Number(cg.buckets.Calls()), human.Percent(ft), human.Seconds(recommended)), false)
	}
	if !exact && lo <= ft && hi > ft {
		emit(finding.Newf(finding.CheckNoBucketAtTimeout, finding.Fields{"configured_seconds": t.Value,
			"cut_off_low_fraction": lo, "cut_off_high_fraction": hi, "false_timeouts_fraction": ft},
			"no bucket bound at the %s of %s: the buckets only say it cuts off %s of these calls, so whether it keeps to the %s asked for %s; %s",
			what, human.Seconds(t.Value), share, human.Percent(ft), map[bool]string{true: "is known", false: "cannot be told"}[lo > ft || hi <= ft],
			cg.buckets.Advice(t.Value)), false)
	}
	return out
}

// wilson is the Wilson score interval of a share k/n at a confidence.
func wilson(k, n int64, confidence float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	z := math.Sqrt2 * math.Erfinv(confidence)
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return max(mid-half, 0), min(mid+half, 1)
}

// layerFindings: configs of one call chain (--chain: the configs given
// are its layers, the caller's first), each retrying, multiply their
// attempts at the bottom. Configs not declared a chain may be alternatives
// or unrelated services: when several of them retry the calls of one
// group, a note says what they would multiply to if they were layers.
func layerFindings(objects []target.Object, served [][]string, files []string, chain bool) ([]report.CheckFinding, *finding.Finding) {
	var layers []layer
	for _, f := range files {
		if l, ok := fileLayer(objects, served, f); ok {
			layers = append(layers, l)
		}
	}
	if len(layers) < 2 {
		return nil, nil
	}
	total, parts := multiply(layers)
	if !chain {
		note := finding.Newf(finding.CheckLayersUndeclared, finding.Fields{"layers": len(layers), "attempts_at_bottom": total},
			"%d configs retry the calls of the data: %s; if they are layers of one call chain, they make up to %d attempts at the bottom per request (give %s, or %s, to check them as one).",
			len(layers), strings.Join(parts, ", "), total, usage.Chain, usage.Topology)
		return nil, &note
	}
	top := layers[0]
	f := finding.Newf(finding.CheckRetryLayers, finding.Fields{"layers": len(layers), "attempts_at_bottom": total},
		"%d layers retry: %s make up to %d attempts at the bottom per request; retry at one layer (the one nearest the caller, which knows the deadline) and give the others one attempt",
		len(layers), strings.Join(parts, " x "), total)
	return []report.CheckFinding{checkFinding(f, top.pos, top.target, top.object, "")}, nil
}

// layer is the config of one file that retries most: its attempts and
// where they are set (or defaulted).
type layer struct {
	file      string
	attempts  int
	defaulted bool
	pos       target.Pos
	object    string
	target    string
}

// fileLayer is file's layer: among its objects that serve groups of the
// data, the one with the most attempts; false when none retries.
func fileLayer(objects []target.Object, served [][]string, file string) (layer, bool) {
	best := layer{file: file, attempts: 1}
	for i, ob := range objects {
		if ob.Pos.File == file && len(served[i]) > 0 && ob.Attempts != nil && ob.Attempts.Value > best.attempts {
			best = layer{file: file, attempts: ob.Attempts.Value, defaulted: ob.Attempts.Default, pos: ob.Attempts.Pos, object: ob.Name, target: ob.Target}
		}
	}
	return best, best.attempts > 1
}

// multiply is the layers' attempts multiplied, and each layer said:
// "3 (route x, envoy.yaml:12)", a default named as the target's.
func multiply(layers []layer) (int, []string) {
	total := 1
	var parts []string
	for _, l := range layers {
		total *= l.attempts
		where := l.pos.String()
		if l.defaulted {
			where += ", unset: " + l.target + "'s default"
		}
		parts = append(parts, fmt.Sprintf("%d (%s, %s)", l.attempts, l.object, where))
	}
	return total, parts
}

// maxTopologyPaths bounds the paths of a topology checked.
const maxTopologyPaths = 10_000

// topologyLayerFindings: along each path of the topology, the configs of
// its services that retry multiply their attempts at the bottom; a
// TT-CHECK-RETRY-LAYERS finding per path where more than one layer
// retries, at the first layer's line, each path's layers once (a path
// that only adds services that do not retry repeats no finding).
func topologyLayerFindings(objects []target.Object, served [][]string, t *Topology) []report.CheckFinding {
	var out []report.CheckFinding
	seen := map[string]bool{}
	for _, path := range t.Paths(maxTopologyPaths) {
		var layers []layer
		var names []string
		for _, i := range path {
			s := t.Services[i]
			names = append(names, s.Name)
			for _, c := range s.Configs {
				if l, ok := fileLayer(objects, served, c); ok {
					layers = append(layers, l)
				}
			}
		}
		if len(layers) < 2 {
			continue
		}
		// The path up to its last service that retries: the rest adds
		// nothing to the product.
		key := ""
		for _, l := range layers {
			key += l.pos.String() + "\n"
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		total, parts := multiply(layers)
		top := layers[0]
		// The path's hops as the simulation reads them, today's and with
		// retries at the first layer only.
		var hops, one []simulate.ChainHop
		for _, i := range path {
			for _, c := range t.Services[i].Configs {
				if h, ok := fileHop(objects, served, c); ok {
					hops = append(hops, h)
					if len(one) > 0 {
						h.Attempts = 1
					}
					one = append(one, h)
				}
			}
		}
		hang, loose := simulate.ChainHang(hops, true), simulate.ChainHang(hops, false)
		oneHang := simulate.ChainHang(one, true)
		after := ""
		if loose.AfterRootGaveUp > 0 {
			after = fmt.Sprintf(", %d of them after %s gave up at %s", loose.AfterRootGaveUp, names[0], human.Duration(loose.RootGaveUp))
		}
		f := finding.Newf(finding.CheckRetryLayers, finding.Fields{"layers": len(layers), "attempts_at_bottom": total, "path": strings.Join(names, " -> "),
			"hang_attempts_at_bottom": hang.AttemptsAtBottom, "hang_attempts_at_bottom_uncancelled": loose.AttemptsAtBottom,
			"hang_after_root_gave_up": loose.AfterRootGaveUp, "one_layer_attempts_at_bottom": simulate.ChainFastFailures(one).AttemptsAtBottom,
			"one_layer_hang_attempts_at_bottom": oneHang.AttemptsAtBottom},
			"along %s (%s), %d layers retry: %s make up to %d attempts at the bottom per request when it fails fast; when it hangs, the timers let %d reach it (%d if no hop stops when its caller gives up%s); retry at one layer (the one nearest the caller, which knows the deadline) and give the others one attempt: then %d when it fails fast, %d when it hangs",
			strings.Join(names, " -> "), t.File, len(layers), strings.Join(parts, " x "), total, hang.AttemptsAtBottom, loose.AttemptsAtBottom, after,
			simulate.ChainFastFailures(one).AttemptsAtBottom, oneHang.AttemptsAtBottom)
		out = append(out, checkFinding(f, top.pos, top.target, top.object, ""))
	}
	return out
}

// fileHop is file's policy towards its callee as the chain simulation
// reads it: its layer's object (the one that retries most among those
// serving the data, else the first serving one), its attempts, its
// per-try timeout (an idle timeout counts as one: under a hang no byte
// comes) and its overall timeout.
func fileHop(objects []target.Object, served [][]string, file string) (simulate.ChainHop, bool) {
	pick := -1
	for i, ob := range objects {
		if ob.Pos.File != file || len(served[i]) == 0 {
			continue
		}
		if pick < 0 || ob.Attempts != nil && (objects[pick].Attempts == nil || ob.Attempts.Value > objects[pick].Attempts.Value) {
			pick = i
		}
	}
	if pick < 0 {
		return simulate.ChainHop{}, false
	}
	ob := objects[pick]
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	h := simulate.ChainHop{Attempts: 1}
	if ob.Attempts != nil {
		h.Attempts = max(ob.Attempts.Value, 1)
	}
	if ob.PerTryTimeout != nil && ob.PerTryTimeout.Value > 0 {
		h.PerTry = secs(ob.PerTryTimeout.Value)
	}
	if ob.Timeout != nil && ob.Timeout.Value > 0 {
		if ob.TimeoutIdle {
			h.PerTry = secs(ob.Timeout.Value)
		} else {
			h.Overall = secs(ob.Timeout.Value)
		}
	}
	return h, true
}

// wait is the longest a service's config lets it wait for its callee:
// the overall timeout, or where there is none the per-try timeout times
// the attempts (the static worst case), at the value's line; none when
// the config sets neither (it waits for as long as the call takes).
type wait struct {
	seconds float64
	none    bool
	pos     target.Pos
	object  string
	target  string
}

// fileWait is file's longest wait among its objects that serve groups of
// the data; false when the file has no such object.
func fileWait(objects []target.Object, served [][]string, file string) (wait, bool) {
	var w wait
	found := false
	for i, ob := range objects {
		if ob.Pos.File != file || len(served[i]) == 0 {
			continue
		}
		cur := wait{none: true, pos: ob.Pos, object: ob.Name, target: ob.Target}
		switch {
		case ob.Timeout != nil && ob.Timeout.Value > 0:
			cur = wait{seconds: ob.Timeout.Value, pos: ob.Timeout.Pos, object: ob.Name, target: ob.Target}
		case ob.PerTryTimeout != nil && ob.PerTryTimeout.Value > 0:
			attempts := 1
			if ob.Attempts != nil {
				attempts = max(ob.Attempts.Value, 1)
			}
			cur = wait{seconds: ob.PerTryTimeout.Value * float64(attempts), pos: ob.PerTryTimeout.Pos, object: ob.Name, target: ob.Target}
		}
		if !found || cur.none && !w.none || !w.none && !cur.none && cur.seconds > w.seconds {
			w, found = cur, true
		}
	}
	return w, found
}

// topologyInversions: along each edge of the topology's paths, the
// callee's configs may wait at least as long for its own callees as the
// caller waits for it: when the bottom is slow the caller gives up first
// and the callee works on for nobody (TT-CHECK-TIMEOUT-INVERSION, at the
// callee's value, once per pair of values).
func topologyInversions(objects []target.Object, served [][]string, t *Topology) []report.CheckFinding {
	longest := func(s TopologyService) (wait, bool) {
		var w wait
		found := false
		for _, c := range s.Configs {
			cur, ok := fileWait(objects, served, c)
			if ok && (!found || cur.none && !w.none || !w.none && !cur.none && cur.seconds > w.seconds) {
				w, found = cur, true
			}
		}
		return w, found
	}
	var out []report.CheckFinding
	seen := map[string]bool{}
	for _, path := range t.Paths(maxTopologyPaths) {
		for k := 1; k < len(path); k++ {
			up, down := t.Services[path[k-1]], t.Services[path[k]]
			wu, ok1 := longest(up)
			wd, ok2 := longest(down)
			if !ok1 || !ok2 || wu.none || !wd.none && wd.seconds < wu.seconds {
				continue
			}
			key := wu.pos.String() + "\n" + wd.pos.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			downWait := "no timeout"
			if !wd.none {
				downWait = human.Seconds(wd.seconds)
			}
			f := finding.Newf(finding.CheckTimeoutInversion, finding.Fields{"caller": up.Name, "callee": down.Name,
				"caller_wait_seconds": wu.seconds, "callee_wait_seconds": nullable(wd), "caller_file": wu.pos.String()},
				"%s waits at most %s for %s (%s, %s), but %s waits %s for its own calls (%s): when they are slow, %s gives up first and %s works on for nobody; give %s's calls less than %s, less %s's own work",
				up.Name, human.Seconds(wu.seconds), down.Name, wu.object, wu.pos, down.Name, downWait, wd.object,
				up.Name, down.Name, down.Name, human.Seconds(wu.seconds), down.Name)
			out = append(out, checkFinding(f, wd.pos, wd.target, wd.object, ""))
		}
	}
	return out
}

// nullable is a wait's seconds, nil for no timeout.
func nullable(w wait) any {
	if w.none {
		return nil
	}
	return w.seconds
}

// servedGroups returns, object by object, the groups each serves: the
// groups its matches select (mapObject), only those of its methods, and
// where objects compete for a request (target.Object.Router) only the
// groups the target's own rules give it (firstMatch): Envoy and Istio take
// the first route that matches, nginx its location rules. A group is thus
// held against the object that would serve it, not every object whose
// matches it meets.
func servedGroups(objects []target.Object, groups map[string]checkedGroup, names []string, explicit map[string]string) [][]string {
	served := make([][]string, len(objects))
	methodOf := func(g string) string { return groups[g].method }
	named := make([][]string, len(objects))
	for i, ob := range objects {
		if t, err := targets.Lookup(ob.Target); err == nil {
			named[i] = t.GroupsNamed(ob, names)
		}
		for _, g := range mapObject(ob, names, explicit, methodOf) {
			if _, mapped := explicit[ob.Name]; mapped || methodServes(ob, groups[g].method) {
				served[i] = append(served[i], g)
			}
		}
	}
	for _, g := range names {
		path := groupPath(g)
		if path == "" {
			continue // no path: every route may see the group's calls
		}
		routers := map[string][]int{}
		for i, ob := range objects {
			if _, mapped := explicit[ob.Name]; ob.Router != "" && !mapped && slices.Contains(served[i], g) {
				routers[ob.Router] = append(routers[ob.Router], i)
			}
		}
		for _, idx := range routers {
			if len(idx) < 2 {
				continue
			}
			win := firstMatch(objects, idx, g, groups[g].method, named)
			for _, i := range idx {
				if i != win {
					served[i] = slices.DeleteFunc(served[i], func(x string) bool { return x == g })
				}
			}
		}
	}
	return served
}

// topologyServed gives the objects that serve no group of the data, in a
// config of a service of the topology, that service's edges of the data
// (groups "caller callee", spans grouped by caller and callee): a
// service's configs are those of its outgoing calls. Among its edges the
// objects are matched as among any groups (mapObject: one edge takes them
// all, as one group of data does), and an object whose upstream is named
// as a callee (an Envoy cluster, an nginx upstream), or that is named for
// it as the target names the object of one group (resilience4j's
// instance, target.Target.NamesService), serves that edge. So
// the configs of each hop are held against the hop's own calls, and
// their attempts multiply along the topology's paths.
func topologyServed(objects []target.Object, served [][]string, groups map[string]checkedGroup, names []string, explicit map[string]string, t *Topology) {
	methodOf := func(g string) string { return groups[g].method }
	edges := map[string][]string{} // config file -> the edges of its services
	callee := map[string]string{}  // edge -> its callee
	for _, svc := range t.Services {
		var mine []string
		for _, g := range names {
			if caller, to, ok := groupname.Edge(g); ok && caller == svc.Name && slices.Contains(svc.Calls, to) {
				mine = append(mine, g)
				callee[g] = to
			}
		}
		for _, c := range svc.Configs {
			for _, g := range mine {
				if !slices.Contains(edges[c], g) {
					edges[c] = append(edges[c], g)
				}
			}
		}
	}
	for i, ob := range objects {
		es := edges[ob.Pos.File]
		if len(served[i]) > 0 || len(es) == 0 {
			continue
		}
		if _, mapped := explicit[ob.Name]; mapped {
			continue
		}
		for _, g := range mapObject(ob, es, explicit, methodOf) {
			if methodServes(ob, groups[g].method) {
				served[i] = append(served[i], g)
			}
		}
		tg, err := targets.Lookup(ob.Target)
		for _, g := range es {
			named := ob.Upstream != "" && (ob.Upstream == callee[g] || strings.SplitN(ob.Upstream, ".", 2)[0] == callee[g]) ||
				err == nil && tg.NamesService(ob, callee[g])
			if named && !slices.Contains(served[i], g) {
				served[i] = append(served[i], g)
			}
		}
	}
}

// methodServes reports whether an object serves calls of a method: always
// when either says nothing of methods (a gRPC "Service/Method" match is no
// HTTP method), and for an object of several rules, whose methods
// mapObject held with their paths (firstRule).
func methodServes(ob target.Object, method string) bool {
	return hasRules(ob) || methodIn(ob.Matches, method)
}

// methodIn reports whether matches let calls of a method through: when the
// method is not known, when they hold no HTTP method, or when one is it.
func methodIn(matches []target.Match, method string) bool {
	if method == "" {
		return true
	}
	has := false
	for _, m := range matches {
		if m.Kind != target.MatchMethod || !groupname.IsHTTPMethod(strings.ToUpper(m.Value)) {
			continue
		}
		has = true
		if strings.EqualFold(m.Value, method) {
			return true
		}
	}
	return !has
}

// firstMatch picks, among objects of one router that all serve group g
// (idx, in the order the config lists them), the one the target serves
// the group's requests with (path its path, method its method, named the
// groups each object's name gives it). nginx (ngx_http_core_module,
// "location"): an exact match wins; else the longest prefix, at once when
// it is "^~"; else the first regular expression that matches, in the order
// of the file; else that longest prefix. Envoy (RouteConfiguration: "the
// first route that matches is used") and Istio (VirtualService http: "the
// first rule matching an incoming request is used") take the first.
// HAProxy takes the first use_backend rule whose condition holds, then the
// default_backend (configuration.txt, use_backend: "evaluated in their
// declaration order, and the first one which matches will assign the
// backend"): the object of the lowest Rule. gRPC takes the method config
// that names the method, else the service, else the default (grpcRank).
func firstMatch(objects []target.Object, idx []int, g, method string, named [][]string) int {
	path := groupPath(g)
	kind := func(i int, k string) (target.Match, bool) {
		for _, m := range objects[i].Matches {
			if m.Kind == k {
				return m, true
			}
		}
		return target.Match{}, false
	}
	switch targetOf(objects[idx[0]]).Precedence {
	case target.LocationOrder:
	case target.FirstRule:
		best, first := idx[0], 0
		for _, i := range idx {
			if n := firstRule(objects[i], path, method); n > 0 && (first == 0 || n < first) {
				best, first = i, n
			}
		}
		return best
	case target.MethodRank:
		best, rank := idx[0], -1
		for _, i := range idx {
			if r := grpcRank(objects[i], g, named[i]); r > rank {
				best, rank = i, r
			}
		}
		return best
	case target.RouteRules:
		// HTTPRoute's precedence among the rules that match (Gateway API,
		// HTTPRouteRule): an exact path, then the longest prefix, then a
		// method match; ties go to the first listed.
		best, score := idx[0], -1
		for _, i := range idx {
			s := 0
			if _, ok := kind(i, target.MatchExact); ok {
				s = 1 << 20
			} else if m, ok := kind(i, target.MatchPrefix); ok {
				s = len(m.Value) << 1
			}
			if _, ok := kind(i, target.MatchMethod); ok {
				s++
			}
			if s > score {
				best, score = i, s
			}
		}
		return best
	default:
		return idx[0]
	}
	longest, best := -1, target.Match{}
	for _, i := range idx {
		if _, ok := kind(i, target.MatchExact); ok {
			return i
		}
		if m, ok := kind(i, target.MatchPrefix); ok && (longest < 0 || len(m.Value) > len(best.Value)) {
			longest, best = i, m
		}
	}
	if longest >= 0 && best.NoRegex {
		return longest
	}
	for _, i := range idx {
		if _, ok := kind(i, target.MatchRegex); ok {
			return i
		}
	}
	if longest >= 0 {
		return longest
	}
	return idx[0]
}

// severityRank orders severities, the worst highest.
var severityRank = map[string]int{"info": 0, "warning": 1, "error": 2}

// onePerValue makes one finding of each config value out of the findings
// of every group the object serves: the worst group's, naming every group
// it affects with its figure. A value that cuts off too much of one group
// is not also said to fit the others.
func onePerValue(per []report.CheckFinding) []report.CheckFinding {
	type key struct {
		code, file, object string
		line               int
	}
	var order []key
	byKey := map[key][]report.CheckFinding{}
	cuts := map[key]bool{}
	for _, f := range per {
		k := key{f.Code, f.File, f.Object, f.Line}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], f)
		if f.Code == string(finding.CheckTimeoutCutsOff) {
			cuts[key{"", f.File, f.Object, f.Line}] = true
		}
	}
	var out []report.CheckFinding
	for _, k := range order {
		fs := byKey[k]
		if k.code == string(finding.CheckTimeoutFits) && cuts[key{"", k.file, k.object, k.line}] {
			continue
		}
		worst := 0
		for i, f := range fs {
			if worseThan(f, fs[worst]) {
				worst = i
			}
		}
		f := fs[worst]
		if len(fs) > 1 {
			var names []string
			for _, g := range fs {
				names = append(names, g.Group+figure(g))
			}
			f.Groups = names
			f.Message += fmt.Sprintf(" [%d groups: %s]", len(fs), strings.Join(names, "; "))
			// The measured numbers stay the worst group's; Groups lists
			// all of them.
		}
		out = append(out, f)
	}
	return out
}

// worseThan reports whether a is the worse finding of one value: a higher
// severity, else the larger share cut off or the more calls in flight.
func worseThan(a, b report.CheckFinding) bool {
	if severityRank[a.Severity] != severityRank[b.Severity] {
		return severityRank[a.Severity] > severityRank[b.Severity]
	}
	for _, k := range []string{"cut_off_fraction", "cut_off_high_fraction", "in_flight_during_hang"} {
		x, okx := a.Measured[k].(float64)
		y, oky := b.Measured[k].(float64)
		if okx && oky && x != y {
			return x > y
		}
	}
	return false
}

// figure is a group's own number in the list of groups a finding affects.
func figure(f report.CheckFinding) string {
	if x, ok := f.Measured["cut_off_fraction"].(float64); ok {
		return " " + human.Percent(x)
	}
	if x, ok := f.Measured["in_flight_during_hang"].(float64); ok {
		return " " + human.Number(x) + " in flight"
	}
	return ""
}
