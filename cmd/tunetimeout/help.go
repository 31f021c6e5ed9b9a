package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// helpWidth is the widest line --help writes (TestHelpWidth): the Long
// texts and examples are written within it, the lists generated from the
// registries are wrapped to it (wrapList) and so are the flags' usages
// (usageTemplate).
const helpWidth = 80

func init() {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(fs *pflag.FlagSet) string {
		return strings.TrimRight(fs.FlagUsagesWrapped(helpWidth), " \n")
	})
	cobra.AddTemplateFunc("wrapped", func(s string) string { return wrapText("", s, 0) })
	cobra.AddTemplateFunc("groupedFlagUsages", groupedFlagUsages)
	cobra.AddTemplateFunc("topicList", topicList)
}

// flagGroupKey is the flag annotation that names a flag's group in
// --help (flagGroups).
const flagGroupKey = "tunetimeout_flag_group"

// flagGroups order the flags of every command's --help by purpose: the
// common ones first, under "Flags:", then a group a heading. A flag of no
// group is listed last, under "Other flags:". One list serves every
// command: each shows the flags it has.
var flagGroups = []struct {
	id, title string
	names     []string
}{
	{"common", "Flags", []string{"input", "data", "url", "metric", "by", "rate", "pool", "false-timeouts",
		"deadline", "attempts", "fail-on", "suggest", "report", "every", "listen", "timeout", "follow",
		"format", "output", "emit", "emit-dir", "quiet", "help", "no-descriptions"}},
	{"input", "Input flags (what the data are and which to read)", []string{"unit", "latency", "column", "time-column",
		"status-column", "field", "time-field", "status-field", "path-field", "method-field", "log-format", "log-format-name",
		"nginx-conf", "span-kind", "route-pattern", "status", "include-errors", "strict", "from", "to", "interval",
		"table", "time", "query", "database", "dialect", "arrivals", "print-sql", "service", "operation", "tags",
		"lookback", "limit", "max-traces", "config-format"}},
	{"analysis", "Analysis flags (how the timeout is chosen)", []string{"candidates", "confidence", "min", "max",
		"max-groups", "rtt", "network-allowance", "tight-tail", "headroom", "window", "window-precision", "for", "profile", "tz", "map", "baseline", "chain", "topology"}},
	{"policy", "Retry policy and simulation flags", []string{"idempotent", "idempotent-methods", "retry-on",
		"backoff-base", "backoff-cap", "jitter", "hedge", "hedge-at", "retry-budget", "layers", "requests", "seed",
		"fail-rate", "herd", "clients", "capacity", "reject-cost",
		"trigger", "trigger-at", "duration", "recover-within", "workers", "queue", "drop-expired", "plan", "retry-at"}},
	{"output", "Snippet flags (the client configuration written)", []string{"snippet-service", "namespace",
		"gateway-api-channel", "linkerd-resource"}},
	{"rules", "Rule flags", []string{"kind", "test-out", "grafana", "name", "label", "runbook-url", "bulkhead",
		"near-bulkhead", "demand-range", "windows", "requests-metric", "le"}},
	{"source", "Server flags (Prometheus, Jaeger, SQL and ClickHouse: where and how to ask)", []string{"jaeger-url", "clickhouse-url", "selector",
		"at", "step", "aggregate", "peak-range", "header", "bearer-token-file", "bearer-token-env", "basic-auth-user",
		"basic-auth-password-file", "basic-auth-password-env", "ca-file", "insecure-skip-verify", "query-timeout",
		"query-retries", "max-response-bytes", "max-searches", "max-fetch-bytes", "max-fetch-time"}},
}

// groupFlags annotates each flag of fs with its group (flagGroups).
func groupFlags(fs *pflag.FlagSet) {
	group := map[string]string{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			group[n] = g.id
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if id, ok := group[f.Name]; ok {
			if err := fs.SetAnnotation(f.Name, flagGroupKey, []string{id}); err != nil {
				panic(err)
			}
		}
	})
}

// groupedFlagUsages writes the flags of fs group by group, in the order
// of flagGroups, each wrapped to helpWidth under its heading.
func groupedFlagUsages(fs *pflag.FlagSet) string {
	sets := map[string]*pflag.FlagSet{}
	other := pflag.NewFlagSet("other", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		id := ""
		if a := f.Annotations[flagGroupKey]; len(a) > 0 {
			id = a[0]
		} else if f.Name == "help" {
			id = "common" // cobra adds -h when the command runs, after groupFlags
		}
		set := sets[id]
		if id == "" {
			set = other
		} else if set == nil {
			set = pflag.NewFlagSet(id, pflag.ContinueOnError)
			sets[id] = set
		}
		set.AddFlag(f)
	})
	var parts []string
	add := func(title string, set *pflag.FlagSet) {
		if set != nil && set.HasAvailableFlags() {
			parts = append(parts, title+":\n"+strings.TrimRight(set.FlagUsagesWrapped(helpWidth), " \n"))
		}
	}
	for _, g := range flagGroups {
		add(g.title, sets[g.id])
	}
	add("Other flags", other)
	return strings.Join(parts, "\n\n")
}

// usageTemplate is cobra's default usage template with the flags wrapped
// to helpWidth and grouped (groupedFlagUsages), and at the end the help
// topics of the command (topicList) where cobra lists the root's.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

Additional Commands:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

{{groupedFlagUsages .LocalFlags}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{wrappedFlagUsages .InheritedFlags}}{{end}}{{with topicList .}}

Additional help topics:
{{.}}{{end}}{{if .HasAvailableSubCommands}}

{{wrapped (printf "Use \"%s [command] --help\" for more information about a command." .CommandPath)}}{{end}}
`

// finishHelp sets the usage template on root, writes the defaults of
// every command's duration flags as people write them (durationDefaults),
// sends pflag's warnings to standard error (stderrOf) and adds cobra's completion command now rather than when the command
// line is run (cobra adds it then), with its texts fitted to helpWidth
// (fitLong).
func finishHelp(root *cobra.Command) {
	root.SetUsageTemplate(usageTemplate)
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command, cobras bool)
	walk = func(c *cobra.Command, cobras bool) {
		durationDefaults(c.Flags())
		groupFlags(c.Flags())
		c.Flags().SetOutput(stderrOf{c})
		if cobras {
			c.Long = fitLong(c.Long)
		}
		for _, sub := range c.Commands() {
			walk(sub, cobras || sub.Name() == "completion")
		}
	}
	walk(root, false)
}

// stderrOf writes to c's standard error, looked up when written. pflag
// writes there the warning about a deprecated flag (snippet --from,
// summarize -o), which cobra would print to standard output, into the
// report or snippet being written.
type stderrOf struct{ c *cobra.Command }

func (w stderrOf) Write(p []byte) (int, error) { return w.c.ErrOrStderr().Write(p) }

// fitLong fits a text of cobra's own (the completion commands') to
// helpWidth and to a screen (TestHelpFitsAScreen): a tab that indents a
// command becomes two spaces, a command too long is continued on the next
// line after a backslash, prose is wrapped, and a Markdown heading over a
// command ("#### Linux:") becomes a comment of it (joinHeadings).
func fitLong(s string) string {
	lines := joinHeadings(strings.Split(s, "\n"))
	for i, l := range lines {
		if t, ok := strings.CutPrefix(l, "\t"); ok {
			l = "  " + t
		}
		lines[i] = l
		if len([]rune(l)) <= helpWidth {
			continue
		}
		if !strings.HasPrefix(l, " ") {
			lines[i] = wrapText("", l, 0)
			continue
		}
		var b strings.Builder
		for len([]rune(l)) > helpWidth {
			cut := lastSpaceOutside(l[:helpWidth-2])
			if cut <= strings.IndexFunc(l, func(r rune) bool { return r != ' ' }) {
				break // no space to cut at
			}
			b.WriteString(l[:cut] + " \\\n")
			l = "      " + l[cut+1:]
		}
		b.WriteString(l)
		lines[i] = b.String()
	}
	return strings.Join(lines, "\n")
}

// joinHeadings turns each Markdown heading of lines ("#### macOS:") and
// the blank line after it into a shell comment over the commands it heads
// ("  # macOS"), and runs the commands of headings one after the other
// into one block:
//
//	# Linux
//	tunetimeout completion bash > /etc/bash_completion.d/tunetimeout
//	# macOS
//	tunetimeout completion bash > ...
func joinHeadings(lines []string) []string {
	var out []string
	underHeading := false // the lines since the last heading are its commands
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		title, ok := strings.CutPrefix(l, "#### ")
		if !ok {
			if l != "" && !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, " ") {
				underHeading = false
			}
			out = append(out, l)
			continue
		}
		if n := len(out); underHeading && n > 0 && out[n-1] == "" {
			out = out[:n-1]
		}
		out = append(out, "\t# "+strings.TrimSuffix(title, ":"))
		if i+1 < len(lines) && lines[i+1] == "" {
			i++
		}
		underHeading = true
	}
	return out
}

// durationDefaults rewrites the defaults --help shows for duration flags
// with human.ExactDuration: 1m rather than Go's 1m0s, and no "[]" after a
// list of durations that has none.
func durationDefaults(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "duration":
			if d, err := time.ParseDuration(f.DefValue); err == nil {
				f.DefValue = human.ExactDuration(d, false)
			}
		case "durationSlice":
			if f.DefValue == "[]" {
				f.DefValue = ""
			}
		}
	})
}

// promDuration is a flag holding a Prometheus duration (1h, 1d, 7d, 1w) as
// written; the command parses it (model.ParseDuration) and says what is
// wrong with it. --help shows it as a duration, its default written with
// human.ExactDuration in days ("7d", not Go's "168h0m0s"); zero is none.
type promDuration struct{ s *string }

func newPromDuration(fs *pflag.FlagSet, p *string, name string, value time.Duration, usage string) {
	*p = ""
	if value != 0 {
		*p = human.ExactDuration(value, true)
	}
	fs.Var(promDuration{p}, name, usage)
}

func (v promDuration) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}

func (v promDuration) Set(s string) error { *v.s = s; return nil }

func (promDuration) Type() string { return "duration" }

// wrapList writes rows of a registry for --help, one a row: its name
// columns padded to their widest, then its summary wrapped to helpWidth
// under itself.
func wrapList(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	cols := len(rows[0]) - 1
	widths := make([]int, cols)
	for _, r := range rows {
		for i := range cols {
			widths[i] = max(widths[i], len([]rune(r[i])))
		}
	}
	indent := 2
	for _, w := range widths {
		indent += w + 2
	}
	var b strings.Builder
	for _, r := range rows {
		line := "  "
		for i := range cols {
			line += r[i] + strings.Repeat(" ", widths[i]-len([]rune(r[i]))+2)
		}
		b.WriteString(wrapText(line, r[cols], indent) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// wrapText writes text after first, wrapped at spaces to helpWidth, each
// further line indented by indent spaces. A word longer than a line is
// left whole.
func wrapText(first, text string, indent int) string {
	var b strings.Builder
	line := first
	n := len([]rune(line))
	empty := true // nothing of text on this line yet
	for _, w := range strings.Fields(text) {
		wl := len([]rune(w))
		if !empty && n+1+wl > helpWidth {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, n, empty = strings.Repeat(" ", indent), indent, true
		}
		if !empty {
			line += " "
			n++
		}
		line += w
		n += wl
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " "))
	return b.String()
}

// lastSpaceOutside is the offset of the last space of s outside
// parentheses ($(brew --prefix) is not cut), -1 when none.
func lastSpaceOutside(s string) int {
	last, depth := -1, 0
	for i := range len(s) {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ' ':
			if depth == 0 {
				last = i
			}
		}
	}
	return last
}
