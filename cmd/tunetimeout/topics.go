package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// helpTopic is a page of reference that a command's --help leaves out to
// fit one screen before its flags (TestHelpFitsAScreen): every input
// format, the status rule, the call policy... `tunetimeout help NAME`
// prints it, the root's help lists every topic, and a command's help ends
// with the topics it names (withTopics). A topic is a cobra command with
// no Run, which cobra lists as an "additional help topic"; docs/cli has a
// page of each.
type helpTopic struct {
	name, short, long string
}

// helpTopics are the help topics, in the order the root's help lists
// them.
var helpTopics = []helpTopic{
	{"formats", "Every input format, its fields, CSV columns", `Input formats (--input; the default, auto, tells the format from the first
lines, up to 64 or 64 KiB, past a server's own messages and the prefixes of
kubectl, docker compose and syslog), read by analyze, simulate, summarize,
check --data and watch --follow:
` + formatList() + `

CSV: the latency column is --column or the first of latency, duration,
elapsed, response_time (each alone or with a unit suffix _ms, _us, _s,
_seconds). Logs: --by route,method,status_class,status,upstream,host; routes
are normalized (/users/42 -> /users/{id}) unless --route-pattern matches.

Examples:
  # nginx with your own log_format, read from the config, per route
  tunetimeout analyze --input nginx --nginx-conf /etc/nginx/nginx.conf \
      --log-format-name timing --by route --pool 100 /var/log/nginx/access.log*

  # A headerless column of milliseconds from another tool
  awk '{print $NF * 1000}' access.log | tunetimeout analyze --unit ms -

docs/input.md has each format's fields and limits.`},

	{"status", "Which calls count: the status rule, bad lines", `Status rule: 1xx-4xx count, 5xx are left out (--include-errors keeps them),
timeouts (408, 499, 504, 524, 598, 599 and each format's own signals) are kept
as "took at least this long"; --status changes it, e.g.
--status "exclude=4xx count=404 censor=503". Bad lines are counted and the
first few shown; --strict makes the first one fatal.

sql and clickhouse put the same rule into their query, as conditional
counts.`},

	{"timeout", "How the timeout is chosen, presets, pools", `The recommended timeout is the quantile at the share of false timeouts
(--false-timeouts, 0.1% by default: p99.9), padded by rules each shown as a
numbered step of the report: at least --tight-tail x the median, the network
allowance, rounding up to a value people write, a 1ms floor, --min and --max.

--false-timeouts takes a percentage (0.1%) or a ratio (1/1000); a bare 0.1 is
refused as ambiguous.

With --pool and several groups the report leads with their shared hang: they
call one dependency and hang together.

` + wrapText("Network allowance presets: ", presetList()+".", 0) + `

Example:
  # Clients on mobile networks, a 1% false-timeout budget, a 2ms RTT
  tunetimeout analyze --false-timeouts 1% --network-allowance mobile \
      --rtt 2ms data.csv

docs/timeout.md has every step.`},

	{"policy", "Call policies: deadline, retries, simulation", `Call policy: --deadline bounds the whole call and --attempts the attempts
within it (each gets the smaller of the per-try timeout and the time left),
with their backoff (--backoff-base, --backoff-cap, --jitter), --retry-on,
--idempotent (where the input says each call's method, the methods decide: a
group whose calls are all GET, HEAD, OPTIONS, TRACE, PUT or DELETE is
idempotent, one with a POST is not; otherwise only never-sent failures are
retried), --retry-budget, --layers and --hedge; the report then
shows the policy, what a hang and fast failures do with it, and its simulation
(tunetimeout simulate prints only these).

The policy: the per-try timeout is the recommended timeout, and the deadline
bounds the whole call: each attempt gets the smaller of the per-try timeout and
the time left, no attempt is sent with less than the useful minimum (2 x the
median) left, so fast failures get every attempt and a hang costs at most the
deadline. The steps say what a hang and fast failures do, and how many attempts
clients without a bound over the whole call (HAProxy, resilience4j) may make.
When one attempt does not fit, the per-try timeout is lowered to the deadline.

A call that is not idempotent is retried only when the request never reached
the application (connect-failure, refused-stream; RFC 9110 section 9.2.2);
a group whose calls the input shows are all of idempotent methods (GET, HEAD,
OPTIONS, TRACE, PUT, DELETE: its method with --by method, or the methods of its
calls in an nginx, HAProxy, Envoy or JSON log or a CSV method column), or
--idempotent where the input says no method, allows timeouts and 408, 429, 502,
503, 504. 400, 401, 403, 404 and 422 are never retried. --hedge (idempotent
calls) sends another request after the --hedge-at quantile and reports the p99
it gives.

The simulation draws each attempt's latency from the measured histogram,
waits the jittered backoff between attempts, sends no attempt with less than
the useful minimum (2 x the median) left before the deadline, and with
--retry-budget lets each request earn that share of a token (at most 10 kept)
while each retry spends one. Scenarios: normal, --fail-rate of attempts
failing fast (in 1ms, a refused connection), and a hang; each with and without
the budget. The same --seed gives the same figures.

Examples:
  # A 1s deadline, 3 attempts and a 10% retry budget: the call policy and
  # its simulation
  tunetimeout analyze testdata/mixture.csv --rate 400 --pool 200 \
      --deadline 1s --attempts 3 --retry-budget 10% --idempotent

  # Hedging at p95 for idempotent reads
  tunetimeout simulate data.csv --deadline 1s --attempts 2 --idempotent --hedge

  # What a retry budget does when 5 % of attempts fail, as JSON
  tunetimeout simulate latencies.csv --deadline 3s --attempts 3 --idempotent \
      --retry-budget 10% --fail-rate 5% -o json

  # Decorrelated jitter, retries at two layers, another seed
  tunetimeout simulate data.csv --attempts 2 --layers 2 --jitter decorrelated \
      --seed 7

docs/policy.md has the model and its sources.`},

	{"targets", "The client configuration targets of --emit", `Every snippet starts with comments saying which data and which rule
produced each number (gRPC's JSON cannot hold comments: they go to standard
error, or beside it when several snippets are printed).

Targets (--emit, comma-separated, or all), with the file --emit-dir writes:
` + targetList() + `

One target prints its configuration alone; several print one after the
other under a "# ---" line. --emit-dir writes one file per target instead.

docs/snippets.md has what each target writes and how it is checked.`},

	{"findings", "What check compares, each finding it makes", wrapText("", "check reads the configs you run ("+strings.Join(readers(), ", ")+") and "+
		"the latency you measured (--data: any input analyze reads; or --url and --metric: "+
		"a Prometheus histogram over --window, --by its labels; or --report: a saved "+
		"analyze -o json), maps each config "+
		"object to the groups of the data as the proxy would (its route matches and "+
		"methods when the data are grouped by route, --by route,method; the first "+
		"route that matches in Envoy and Istio, nginx's location rules; every group "+
		"when the data are not grouped; --map OBJECT=GROUP over both), reads each "+
		"object as its target enforces it (a timeout over all attempts, or per try), "+
		"and reports once per config value, at its file and line, naming every group "+
		"it affects: the share of calls a timeout cuts off with its confidence "+
		"interval against --false-timeouts, no timeout at all, a hang under the "+
		"config's own bounds exhausting the pool (Little's law at the peak rate, "+
		"against --pool; a limit in the config below it caps the hang), attempts a "+
		"client without an overall timeout cannot fit in the deadline (each try "+
		"after its connect and queue timeouts; none starts after nginx's "+
		"proxy_next_upstream_timeout), retries of non-idempotent requests where "+
		"the group's calls hold writes, retries of 500s, retries without jitter, retries at "+
		"several layers (--chain), a connect timeout longer than analyze's rule "+
		"allows, "+
		"a default in force.", 0) + `

--baseline FILE accepts the findings of an earlier check -o json; --suggest
writes the edits that bring each value to the recommendation as a diff for
patch -p0; a config whose name holds a control character is refused there,
as a diff header cannot hold it safely.

` + wrapText("", "What a run reads is bounded, so that no config takes the machine: each "+
		"config file and include at most "+human.Bytes(analysis.MaxConfigBytes)+", and one budget for the run: "+
		human.Bytes(budget.MaxBytes)+" of config in all (every file and include, and the values YAML "+
		"aliases repeat) and "+human.Count(budget.MaxNodes)+" nodes in all (YAML nodes counted with "+
		"every alias expanded, a file of more words refused before it is decoded; nginx words; "+
		"the key segments of Spring properties; hosts a route repeats). nginx includes nest "+
		"at most 16 deep, through at most 512 files. A run over a bound stops with one line "+
		"that names it and where it was reached.", 0) + `

Exit codes: 0 when no finding is at or above --fail-on (default error), 1
when one is, 2 for a wrong command line. Findings codes: docs/findings.md.

Examples:
  # Two layers of one call chain, JSON for CI
  tunetimeout check --chain envoy.yaml service-config.json \
      --data latencies.csv -o json

  # SARIF for GitHub code scanning, exit 0 whatever it finds
  tunetimeout check envoy.yaml --data latencies.csv -o sarif \
      --output check.sarif --fail-on never

  # A Prometheus histogram as the data, per route label
  tunetimeout check envoy.yaml --url http://localhost:9090 \
      --metric http_request_duration_seconds --by route --window 7d

docs/check.md has the model and every target's reading.`},

	{"histograms", "How Prometheus histograms and rates are read", `Classic histograms: sum by (le) (increase(NAME_bucket[WINDOW])) at --at. A
quantile is only known to lie in a bucket (lo, hi], chosen on the unrounded
counts: the timeout builds on hi (conservative), the linear estimate within
the bucket is shown beside it, labelled Prometheus's histogram_quantile only
when it is what Prometheus answers, and the report suggests an le bound to
add near it. A quantile in the +Inf bucket is a lower bound, never shown as
measured; a histogram with only the +Inf bucket gives no timeout (exit 1) and
the bounds to add. NaN and negative counts and negative bounds are repaired
conservatively or refused, each with a note. Native histograms (Prometheus
2.40+ with --enable-feature=native-histograms) are read with their
exponential buckets, VictoriaMetrics's vmrange histograms with their ranges;
VictoriaMetrics's own histogram_quantile, which differs from Prometheus's, is
asked for and shown. Summaries are shown, with why their quantiles cannot
give a timeout.

Rates for Little's law: the mean from NAME_count over the window, the peak
from the largest 1-minute rate within it. --step 1h evaluates every hour of
the window and the recommendation builds on the worst one (--aggregate
overall: the whole window). The unit comes from the name's suffix (_seconds,
_milliseconds) or --unit.

Example:
  # Hour by hour over a day; the timeout must survive the worst hour
  tunetimeout prom --url http://localhost:9090 --metric rpc_latency_seconds \
      --window 1d --step 1h

docs/prometheus.md has the details.`},

	{"alerting", "The recording rules and alerts rules writes", `rules writes, per group, recording rules for the share of calls slower than
the timeout in force (the recommendation, or --timeout),

  1 - (sum by (BY) (rate(NAME_bucket{SEL,le="BOUND"}[W]))
       / sum by (BY) (rate(NAME_count{SEL}[W])))

recorded as tunetimeout:false_timeout:ratio_rateW; multi-window, multi-burn-
rate alerts on it against the budget (1 - the recommendation's quantile, or
--false-timeouts), the SRE workbook's pairs by default (--windows); and
Little's law alerts: a hang would hold more calls than --pool (rate x
timeout), normal demand (rate x mean latency) above --near-bulkhead of the
bulkhead.

The ratio is exact when the timeout is a bucket bound; else it counts above
the next bound and is a lower bound, and a comment says which le to add.
Native histograms use histogram_fraction (an interpolation).

The input is a live Prometheus, read as the prometheus command reads it, or
--report, a saved tunetimeout prometheus -o json (give --by and --selector as
that run had them). --metric, --by and --selector are checked as PromQL
names and label matchers before anything is written (exit 2 when not).
--kind prometheusrule writes a prometheus-operator PrometheusRule;
--test-out a promtool unit test of the rules; --grafana a Grafana dashboard
of the ratios and of the watch command's metrics.

Example:
  # From a saved report, for the 250ms timeout configured today
  tunetimeout prom --url http://localhost:9090 --metric rpc_seconds \
      -o json --output report.json
  tunetimeout rules --report report.json --timeout 250ms \
      --kind prometheusrule --name rpc-timeouts --output rpc.yaml

docs/rules.md has every rule and alert.`},

	{"endpoints", "What watch serves, failed runs, stopping", `watch runs the analysis of the prometheus command every --every, each time
on the --window ending now, and serves the last good report on --listen.
--by, --metric and --unit are then the labels to group by, the histogram
(without _bucket) and its unit, as in the prometheus command. It serves:

  /metrics       its numbers for Prometheus, named in docs/watch.md
  /              the HTML report
  /report.json   the JSON report
  /-/healthy     200 while serving
  /-/ready       200 once a run has succeeded, 503 before

A failed run (Prometheus down, a bad answer) logs one line, keeps serving the
last good report and sets tunetimeout_last_run_success to 0; the next run
tries again. Groups gone from a run are gone from /metrics. Memory holds one
report (with --follow, and the window's histograms), however many the runs.

--timeout names the timeouts the clients are configured with:
tunetimeout_cut_off_ratio gives the share of calls each cuts off (for
buckets, an upper bound), beside the recommended timeout's. They join the
report's candidates: the default ladder, or --candidates when given.

With --follow it reads the files named instead, as tail -F does: the lines
appended since the last run (a file renamed, truncated or replaced is
followed), reduced to one histogram per group and minute, of which it keeps
those of the last --window, and analyses them as analyze would. The files
are read from their ends, as they are now; CSV files need --input csv.

SIGINT or SIGTERM stops the run in progress and the server, which lets the
requests in flight end; the exit code is then 130.

Example:
  # Every minute over the last hour, on all interfaces of a container
  tunetimeout watch --url http://prometheus:9090 --metric rpc_latency_seconds \
      --window 1h --every 1m --listen :9847`},

	{"servers", "Credentials, retries, limits, Jaeger paging", `prometheus, watch, rules, check --url, jaeger and clickhouse read servers.

Credentials come from files or environment variables, never from the
command line, where the process list shows them (basic auth:
--basic-auth-user with --basic-auth-password-file or -env; a bearer token:
--bearer-token-file or --bearer-token-env; any header: -H @FILE, lines of
Name: value), and never appear in output or errors, cut or whole. A password
in --url, a credential in its query (?api_key=) or a -H that carries one
(Authorization, Cookie, X-Api-Key...) is refused (exit 2), the same in every
source. Failed queries and requests are
retried with capped exponential backoff and full jitter. Answers are
decoded as they arrive; one larger than --max-response-bytes (256MiB)
fails its query. prometheus (and watch, rules, check --url per run) and
clickhouse send a fixed number of queries whatever the data, so their work
is bounded by those: each answer at most --max-response-bytes, each query
at most --query-retries + 1 attempts of --query-timeout.

Jaeger: the window is --lookback up to now, or --from and --to. The API has
no cursor: each search asks for at most --limit traces, and one that answers
that many is split in two halves, again until every answer is below the
limit; traces answered twice are read once, and copies of one trace within
an answer count once toward --limit. --max-traces bounds the whole fetch (a
note says when it stopped). Whatever the server answers (one that ignores
the window answers full pages for ever), the fetch fails with the bound
named after --max-searches searches (10000), --max-fetch-bytes of answers
in all (4GiB) or --max-fetch-time (15m). Answers are streamed to a
temporary file, removed afterwards; one larger than --max-response-bytes
fails. Without --service, the services Jaeger knows are listed.

Examples:
  # Mimir or Cortex: the tenant header and a bearer token from the environment
  tunetimeout prom --url https://mimir.example.com/prometheus \
      -H 'X-Scope-OrgID: team-a' --bearer-token-env MIMIR_TOKEN \
      --metric http_request_duration_seconds -o json

  # Jaeger behind a proxy that wants a token, with a smaller page per search
  tunetimeout jaeger --url https://jaeger.example.com --service api \
      --bearer-token-env JAEGER_TOKEN --limit 200 --lookback 6h`},

	{"database", "How sql and clickhouse query the database", `sql and clickhouse make the engine holding the rows compute the histogram
tunetimeout would: one row per group and HDR bucket (3 significant digits,
microseconds), with the status rule's censored and excluded calls as
conditional counts. What comes back is bounded by groups x filled buckets,
not rows, and the report is the one a local read of the same rows gives.
sql prints the query: save its answer as CSV with its header and read it
with tunetimeout analyze --input buckets. --arrivals prints the query of the
calls per second per group instead: its answer, given to analyze beside the
buckets, gives the rates (without it, --rate does). clickhouse runs both
over ClickHouse's HTTP interface (no driver), the calls per second with
--time; --print-sql prints the queries instead. clickhouse --window 1h
(with --time) groups the buckets by window too, in a window_start column:
the windows, the worst window and the profile of analyze --window.

--table, --query, --latency, --status-column, --time and --by are your SQL,
each put in the query as one name or expression: one with a ';', a comment,
or a parenthesis or quote it does not close, outside quotes, is refused.

The latency is cut to whole microseconds toward zero, as a local read cuts
it: store it as an integer or a decimal, since a floating-point column can
put a value one microsecond off.

With --by, the engine keeps the --max-groups groups of most rows apart and
folds the others into one, which analyze reads as "other": the answer stays
bounded whatever the number of groups. Give --arrivals the flags of the
buckets query (--latency too), so that both fold the same groups.

--by route(COL) groups by the route of the request targets in COL, as
analyze --by route does for a log (/users/42?x=1 -> /users/{id}). The
clickhouse dialect and the clickhouse command have ClickHouse make the routes
itself; the others (and clickhouse with --route-pattern) group by the targets
themselves, in a route_target column whose routes analyze makes on reading
(give it the same --route-pattern): exact, but the answer then grows with
the distinct targets, and --max-groups is applied by analyze, not by the
engine.

docs/sql.md has every dialect.`},

	{"interval-logs", "What summarize writes, and merging it", `summarize writes an HdrHistogram interval log: one histogram per group and
interval (--interval), in microseconds, with the group in its Tag=. Comment
lines keep what the format has no place for (the censored values, connect
times, exclusions by reason, calls out of range, arrivals per second,
records and bad lines), so that

  tunetimeout analyze host-a.hlog host-b.hlog ...

gives the report one run over all the raw logs would give. A busy group
costs a few kilobytes an interval (a group with a handful of calls an
interval is better summarised with a longer --interval): summarise logs
where they are written, copy the .hlog files, analyse them together.
Intervals start at whole multiples of --interval since the Unix epoch, so
summaries of different hosts line up; calls without a time go to one last
interval at time 0 of length 0. Summaries are inputs too: summarize
--interval 1h host-*.hlog merges one-minute summaries into one file.

Example:
  # One hour of every host's summaries
  tunetimeout analyze --from 2026-11-02T10:00:00Z --to 2026-11-02T11:00:00Z \
      host-*.hlog

docs/interval-logs.md has the format.`},
}

// topicsKey is the annotation of a command that names its help topics
// (withTopics).
const topicsKey = "tunetimeout_help_topics"

// withTopics names the help topics c's help ends with, most useful
// first.
func withTopics(c *cobra.Command, names ...string) *cobra.Command {
	for _, n := range names {
		if topicNamed(n) == nil {
			panic(fmt.Sprintf("%s: no help topic %q", c.Name(), n))
		}
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[topicsKey] = strings.Join(names, " ")
	return c
}

func topicNamed(name string) *helpTopic {
	for i := range helpTopics {
		if helpTopics[i].name == name {
			return &helpTopics[i]
		}
	}
	return nil
}

// topicsOf are the help topics c's help names: every topic for the root,
// the ones withTopics gave c for a command.
func topicsOf(c *cobra.Command) []helpTopic {
	if !c.HasParent() {
		return helpTopics
	}
	var ts []helpTopic
	for _, n := range strings.Fields(c.Annotations[topicsKey]) {
		ts = append(ts, *topicNamed(n))
	}
	return ts
}

// topicList lists the help topics c's help names, as people type them.
func topicList(c *cobra.Command) string {
	var rows [][]string
	for _, t := range topicsOf(c) {
		rows = append(rows, []string{c.Root().Name() + " help " + t.name, t.short})
	}
	return wrapList(rows)
}

// topicCommands are the help topics as cobra commands without Run, which
// cobra calls additional help topics.
func topicCommands() []*cobra.Command {
	var cs []*cobra.Command
	for _, t := range helpTopics {
		cs = append(cs, &cobra.Command{Use: t.name, Short: t.short, Long: t.long})
	}
	return cs
}

// completeTopics has `tunetimeout help <TAB>` offer the help topics too:
// cobra's help command completes only the commands.
func completeTopics(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.ValidArgsFunction == nil {
			continue
		}
		// An unknown topic is a wrong command line (exit 2), where cobra
		// prints the usage and exits 0.
		run := c.Run
		c.Run = nil
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				if cmd, _, err := root.Find(args); cmd == nil || err != nil {
					return usage.Errorf("unknown help topic %q: tunetimeout help lists the commands and topics", strings.Join(args, " "))
				}
			}
			run(c, args)
			return nil
		}
		commands := c.ValidArgsFunction
		c.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cs, directive := commands(c, args, toComplete)
			if len(args) == 0 {
				for _, t := range helpTopics {
					if strings.HasPrefix(t.name, toComplete) {
						cs = append(cs, cobra.CompletionWithDesc(t.name, t.short))
					}
				}
			}
			return cs, directive
		}
	}
}
