package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/source"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// checkFlags holds the check command's own flags.
type checkFlags struct {
	data, maps                                []string
	failOn, baseline, saved, cfgFmt, topology string
	suggest                                   bool
	src                                       sourceFlags
}

// severities are the values of --fail-on.
var severities = []string{string(finding.Info), string(finding.Warning), string(finding.Error), "never"}

func newCheck() *cobra.Command {
	var (
		o  = analysis.CheckOptions{Options: analysis.Options{Recommend: recommend.DefaultOptions()}}
		f  analyzeFlags
		cf checkFlags
	)
	cmd := &cobra.Command{
		Use:   "check CONFIG... (--data DATA... | SOURCE | --report FILE)",
		Short: "Hold the timeouts and retries you run against measured latency",
		Long: wrapText("", "check reads the configs you run ("+strings.Join(readers(), ", ")+") and "+
			"the latency you measured (--data FILE; a SOURCE: Prometheus, --url; "+
			"Jaeger, --jaeger-url; ClickHouse, --clickhouse-url; or --report), matches each config object to the groups it serves "+
			"as the proxy would, and reports once per config value, at its file and line, "+
			"what it costs: the share of calls a timeout cuts off, no timeout at all, a "+
			"hang exhausting the pool, retries that do not fit or replay a write. "+
			"--suggest writes the edits as a diff for patch -p0. It exits 1 when a finding "+
			"is at or above --fail-on (default error), 2 for a wrong command line. "+
			"A run reads at most "+human.Bytes(budget.MaxBytes)+" and "+human.Count(budget.MaxNodes)+" nodes of config: help findings.", 0),
		Example: `  # An Envoy route's timeout over the worked example's data
  tunetimeout check envoy.yaml --data testdata/mixture.csv

  # nginx per route, with a pool of 200
  tunetimeout check nginx.conf --data access.log --by route --pool 200

  # The edits to make, applied
  tunetimeout check nginx.conf --data access.log --suggest | patch -p0`,
		Args: func(_ *cobra.Command, args []string) error { return cf.args(args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			write, err := cf.apply(cmd, &f, &o, args)
			if err != nil {
				return err
			}
			c, err := analysis.Check(cmd.Context(), o, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c.ToolVersion = buildVersion()
			return cf.finish(cmd, f.output, write, c)
		},
	}
	addCheckFlags(cmd, &cf, &o)
	addInputFlags(cmd, &o.Options, &f)
	addSourceFlags(cmd, &cf.src, false)
	addAnalysisFlags(cmd, &o.Options, &f, report.CheckFormats())
	return withTopics(cmd, "findings", "formats", "status", "timeout", "histograms", "servers")
}

// addCheckFlags registers the check command's own flags: the latency
// beside the input and source flags, the findings, and how to read the
// configs.
func addCheckFlags(cmd *cobra.Command, cf *checkFlags, o *analysis.CheckOptions) {
	fl := cmd.Flags()
	fl.StringSliceVar(&cf.data, "data", nil, "the measured latency: files, globs or - (any input analyze reads)")
	fl.StringVar(&cf.saved, "report", "", "the measured latency as a report analyze wrote with -o json (exact at its candidates, bracketed by its bins elsewhere)")
	fl.StringArrayVar(&cf.maps, "map", nil, "send a config object to a group: OBJECT=GROUP, the object named as check lists it (repeatable)")
	fl.StringVar(&cf.failOn, "fail-on", string(finding.Error), "exit 1 when a finding is at or above this severity: "+strings.Join(severities, ", "))
	fl.StringVar(&cf.baseline, "baseline", "", "a check written with -o json whose findings are known: they are shown, marked, and fail nothing")
	fl.BoolVar(&cf.suggest, "suggest", false, "write, instead of the report, the edits that bring each value to the recommendation, as a unified diff for patch -p0")
	fl.BoolVar(&o.Chain, "chain", false, "the configs are the layers of one call chain, the caller's first: their retries multiply")
	fl.StringVar(&cf.topology, "topology", "", "a YAML file naming each service's configs and the services it calls: the retries along each path multiply (docs/chain.md); its configs are checked too")
	fl.StringVar(&cf.cfgFmt, "config-format", "", "read every config as this target's: "+strings.Join(readers(), ", ")+" (default: detected per file)")
	complete(cmd, "fail-on", severities...)
	complete(cmd, "config-format", readers()...)
}

// args checks check's arguments: the configs, unless --topology names
// them.
func (cf *checkFlags) args(args []string) error {
	if len(args) == 0 && cf.topology == "" {
		return usageError{fmt.Errorf("check: name the config files to check (%s), then the latency with --data, --url or --report", strings.Join(readers(), ", "))}
	}
	return nil
}

// finish marks c's findings known in --baseline, writes c, and fails when
// a finding is at or above --fail-on.
func (cf *checkFlags) finish(cmd *cobra.Command, output string, write func(io.Writer, *report.Check) error, c *report.Check) error {
	if cf.baseline != "" {
		b, err := readCheck(cf.baseline)
		if err != nil {
			return err
		}
		c.ApplyBaseline(b)
	}
	if err := cf.write(cmd, output, write, c); err != nil {
		return err
	}
	if cf.failOn != "never" && c.AtLeast(cf.failOn) {
		return fmt.Errorf("findings at or above %s: see above", cf.failOn)
	}
	return nil
}

// write writes the check in the -o format, or with --suggest the edits
// alone, to output or standard output.
func (cf *checkFlags) write(cmd *cobra.Command, output string, write func(io.Writer, *report.Check) error, c *report.Check) error {
	out := func(w io.Writer) error { return write(w, c) }
	if cf.suggest {
		out = suggestFixes(cmd, c)
	}
	if output != "" {
		return temps.Write(cmd.Context(), output, out)
	}
	return out(cmd.OutOrStdout())
}

// apply parses check's flags into o and returns the writer of -o.
func (cf *checkFlags) apply(cmd *cobra.Command, f *analyzeFlags, o *analysis.CheckOptions, args []string) (func(io.Writer, *report.Check) error, error) {
	if err := cf.applyLatency(cmd, f, o); err != nil {
		return nil, err
	}
	if !slices.Contains(severities, cf.failOn) {
		return nil, usageError{fmt.Errorf("--fail-on %q: want %s", cf.failOn, strings.Join(severities, ", "))}
	}
	if cf.cfgFmt != "" && !slices.Contains(readers(), cf.cfgFmt) {
		return nil, usageError{fmt.Errorf("--config-format %q: want %s", cf.cfgFmt, strings.Join(readers(), ", "))}
	}
	write, err := report.LookupCheck(f.format)
	if err != nil {
		return nil, usageError{formatHint(err, f.format)}
	}
	if o.Map, err = cf.applyMaps(); err != nil {
		return nil, err
	}
	o.Configs, o.Inputs, o.ConfigFormat = args, cf.data, cf.cfgFmt
	if cf.topology != "" {
		if o.Chain {
			return nil, usageError{fmt.Errorf("--chain, --topology: one says all the configs are one chain, the other which are; give one")}
		}
		t, err := analysis.ReadTopology(cf.topology)
		if err != nil {
			return nil, err
		}
		o.Topology = t
	}
	return write, nil
}

// applyLatency parses the flags of the latency to check against into o:
// --data, a source or --report, one of them, and the flags of the analysis.
func (cf *checkFlags) applyLatency(cmd *cobra.Command, f *analyzeFlags, o *analysis.CheckOptions) error {
	n := cf.src.given()
	for _, given := range []bool{len(cf.data) > 0, cf.saved != ""} {
		if given {
			n++
		}
	}
	switch {
	case n == 0:
		return usageError{fmt.Errorf("--data, --url or --report: name the latency to check against (any input analyze reads, a Prometheus histogram, or a report analyze wrote with -o json)")}
	case n > 1:
		return usageError{fmt.Errorf("--data, --url, --report: check against one source of latency at a time")}
	case cf.saved != "":
		r, err := readReport(cmd.InOrStdin(), cf.saved)
		if err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		o.Report = r
	}
	cf.src.prepare(f, &o.Options, len(cf.data) > 0 || cf.saved != "")
	if err := f.apply(cmd.Flags(), &o.Options); err != nil {
		return usageError{err}
	}
	if o.Report == nil {
		src, err := cf.src.source(&o.Options, cf.data)
		if err != nil {
			return usageError{err}
		}
		if p, ok := src.(*source.Prometheus); ok && p.Options.Step > 0 {
			return usageError{fmt.Errorf("--step: check holds a config over the whole --window")}
		}
		o.Source = src
	}
	return nil
}

// applyMaps parses --map, OBJECT=GROUP.
func (cf *checkFlags) applyMaps() (map[string]string, error) {
	maps := map[string]string{}
	for _, m := range cf.maps {
		obj, group, ok := strings.Cut(m, "=")
		if !ok || obj == "" || group == "" {
			return nil, usageError{fmt.Errorf("--map %q: want CONFIG_OBJECT=GROUP", m)}
		}
		maps[obj] = group
	}
	return maps, nil
}

// suggestFixes writes the edits alone, for patch -p0.
func suggestFixes(cmd *cobra.Command, c *report.Check) func(io.Writer) error {
	return func(w io.Writer) error {
		skipped, err := report.WriteFixes(w, c, func(file string) ([]byte, error) { return analysis.ReadConfigFile(file) })
		if skipped > 0 && err == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "tunetimeout: %s left out: their value is no longer on its line\n", human.Plural(int64(skipped), "edit"))
		}
		return err
	}
}

// readCheck reads a --baseline.
func readCheck(name string) (*report.Check, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	defer f.Close()
	return report.ReadCheckJSON(f, name)
}

// buildVersion is the version of this build, as `tunetimeout version`
// finds it (-ldflags "-X main.version=...", else the module's), "" when
// neither knows one.
func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return ""
}

// readers are the snippet targets that read configs.
func readers() []string {
	var out []string
	for _, t := range targets.All {
		if t.Reads() {
			out = append(out, t.Name)
		}
	}
	return out
}
