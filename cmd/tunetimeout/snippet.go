package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

func newSnippet() *cobra.Command {
	var (
		e    emitFlags
		from string
	)
	cmd := &cobra.Command{
		Use:   "snippet --report REPORT.json --emit TARGET[,TARGET...]",
		Short: "Write client configuration (Envoy, gRPC, ...) from a JSON report",
		Long: wrapText("", `snippet renders client configuration from a report saved with
"analyze -o json": for each group its timeout, retries, backoff and retry
budget, and for the service its connect timeout and bulkhead, in the syntax
and limits of each target (--emit, comma-separated, or all: `+strings.Join(targets.Names(), ", ")+
			`), each number commented with the data and the rule it comes from.`, 0),
		Example: `  tunetimeout analyze --by route,method -o json --rate 400 access.log \
      > report.json
  tunetimeout snippet --report report.json --emit envoy,grpc
  tunetimeout snippet --report report.json --emit istio --service checkout \
      --namespace shop > istio.yaml
  tunetimeout snippet --report report.json --emit all --emit-dir config/`,
		Args: noArgs("give --report %s"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return usageError{errors.New("--report: the JSON report to render (analyze -o json), or - for standard input")}
			}
			if e.emit == "" && e.dir == "" {
				return usageError{fmt.Errorf("--emit: which targets (%s, or all)", strings.Join(targets.Names(), ", "))}
			}
			r, err := readReport(cmd.InOrStdin(), from)
			if err != nil {
				return err
			}
			return e.write(cmd.OutOrStdout(), cmd.ErrOrStderr(), r, nil, true)
		},
	}
	cmd.Flags().StringVar(&from, "report", "", "the JSON report to render (analyze -o json); - for standard input")
	// --from was its name before: it reads as analyze's --from, a time.
	cmd.Flags().StringVar(&from, "from", "", "the old name of --report")
	if err := cmd.Flags().MarkDeprecated("from", "use --report"); err != nil {
		panic(err)
	}
	e.register(cmd)
	return withTopics(cmd, "targets", "policy")
}

// emitFlags are the snippet flags shared by analyze and snippet.
type emitFlags struct {
	emit, dir string
	opts      target.Options
	targets   []target.Target
	cmd       *cobra.Command
	// output is the command's --output: where the report goes ("" or "-":
	// standard output, where the snippets are printed too).
	output *string
	// serviceFlag names the flag of the service the snippets configure:
	// "" is --service; a command whose --service says what to read (jaeger)
	// names it --snippet-service.
	serviceFlag string
}

// register adds the flags to cmd and checks them before it runs, so that an
// unknown target is a usage error before any input is read.
func (e *emitFlags) register(cmd *cobra.Command) {
	e.cmd = cmd
	fl := cmd.Flags()
	fl.StringVar(&e.emit, "emit", "", "client configuration to write: "+strings.Join(targets.Names(), ", ")+", or all (comma-separated)")
	fl.StringVar(&e.dir, "emit-dir", "", "write one file per target (envoy.yaml, grpc.json, ...) into this directory; without --emit, every target; for a chain's plan (analyze --plan) a folder per caller and callee, and topology.yaml for check --topology (docs/chain.md)")
	fl.StringVar(&e.opts.Service, e.serviceFlagName(), target.DefaultService, "the service, cluster or upstream the snippets configure")
	fl.StringVar(&e.opts.Namespace, "namespace", "default", "Kubernetes namespace of the Istio, Linkerd and Gateway API snippets")
	fl.StringVar(&e.opts.GatewayAPIChannel, "gateway-api-channel", target.GatewayStandard, "Gateway API release channel of the cluster's CRDs: standard or experimental (since v1.7.0 both have rules[].retry, written on every rule)")
	fl.StringVar(&e.opts.LinkerdResource, "linkerd-resource", target.LinkerdAuto, "what the Linkerd snippet writes: auto (GRPCRoute for gRPC methods, else HTTPRoute), httproute, grpcroute, or serviceprofile (meshes older than 2.16)")
	completeList(cmd, "emit", append(targets.Names(), "all")...)
	complete(cmd, "gateway-api-channel", target.GatewayStandard, target.GatewayExperimental)
	complete(cmd, "linkerd-resource", target.LinkerdAuto, target.LinkerdHTTPRoute, target.LinkerdGRPCRoute, target.LinkerdServiceProfile)
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := e.parse(); err != nil {
			return usageError{err}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// serviceFlagName is the name of the flag of the service the snippets
// configure.
func (e *emitFlags) serviceFlagName() string {
	if e.serviceFlag == "" {
		return "service"
	}
	return e.serviceFlag
}

func (e *emitFlags) parse() error {
	if err := e.opts.Check(); err != nil {
		return err
	}
	list := e.emit
	if list == "" && e.dir != "" {
		list = "all"
	}
	if list == "" {
		return nil
	}
	ts, err := targets.ParseList(list)
	if err != nil {
		return fmt.Errorf("--emit: %w", err)
	}
	e.targets = ts
	return nil
}

// wrap returns a report writer lookup whose writers add the snippets after
// the report: printed to the command's output (not into an --output file),
// or written to --emit-dir. HTML and Markdown carry them inside the
// document instead (report.EmbedsSnippets), and --emit-dir still writes
// the files.
func (e *emitFlags) wrap(lookup func(string) (report.Writer, error)) func(string) (report.Writer, error) {
	return func(format string) (report.Writer, error) {
		write, err := lookup(format)
		if err != nil || len(e.targets) == 0 {
			return write, err
		}
		embed := report.EmbedsSnippets(format)
		if toStdout := e.output == nil || *e.output == "" || *e.output == "-"; format == "json" && !embed && e.dir == "" && toStdout {
			// YAML and Go after the JSON document: no parser reads that.
			return nil, errors.New("--emit with -o json would print the snippets after the JSON document on standard output, which no JSON parser then reads: write the snippets with --emit-dir DIR, or the report with --output FILE (or later: tunetimeout snippet --report FILE --emit ...)")
		}
		return func(w io.Writer, r *report.Report) error {
			var rs []target.Rendered
			if embed {
				var err error
				if rs, err = target.RenderAll(e.cmd.Context(), r, e.targets, e.opts); err != nil {
					return err
				}
				target.Embed(r, rs)
			}
			if err := write(w, r); err != nil {
				return err
			}
			if embed && e.dir == "" {
				return nil
			}
			return e.write(e.cmd.OutOrStdout(), e.cmd.ErrOrStderr(), r, rs, false)
		}, nil
	}
}

// write puts the snippets of r (rs, or rendered now when nil) into files
// under --emit-dir, or prints them to out; alone: nothing before them
// (target.Print).
func (e *emitFlags) write(out, errOut io.Writer, r *report.Report, rs []target.Rendered, alone bool) error {
	if e.dir != "" && r.CallGraph != nil && r.CallGraph.Plan != nil {
		// The chain's plan: a folder per caller and callee, and the
		// topology check reads (docs/chain.md).
		if fl := e.serviceFlagName(); e.cmd.Flags().Changed(fl) {
			fmt.Fprintf(errOut, "tunetimeout: --%s is not used with a plan: each edge's snippets configure its callee.\n", fl)
		}
		return analysis.WriteChainDir(e.cmd.Context(), &temps, e.dir, r, e.targets, e.opts, errOut)
	}
	if rs == nil {
		var err error
		if rs, err = target.RenderAll(e.cmd.Context(), r, e.targets, e.opts); err != nil {
			return err
		}
	}
	if e.dir != "" {
		return target.WriteDir(e.cmd.Context(), &temps, e.dir, rs, errOut)
	}
	return target.Print(out, errOut, rs, alone)
}

// readReport reads a JSON report from a file or "-" (report.ReadJSON).
func readReport(stdin io.Reader, name string) (*report.Report, error) {
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	return report.ReadJSON(in, name)
}

// targetList lists the snippet targets for --help, one a line.
func targetList() string {
	var rows [][]string
	for _, t := range targets.All {
		rows = append(rows, []string{t.Name, t.File, t.Summary})
	}
	return wrapList(rows)
}
