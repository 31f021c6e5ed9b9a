package finding

import (
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Def declares one code: its severity and what it means, in a line
// (Summary names options as the CLI writes them, usage.Option).
// docs/findings.md says more, for each code.
type Def struct {
	Code     Code
	Severity Severity
	Summary  string
}

// The codes of the recommendation (recommend.Recommend).
const (
	MaxBelowQuantile Code = "TT-MAX-BELOW-QUANTILE"
	LowerBound       Code = "TT-LOWER-BOUND"
	LowerBoundPileUp Code = "TT-LOWER-BOUND-PILEUP"
	CensoredPileUp   Code = "TT-CENSORED-PILEUP"
	FewSamples       Code = "TT-FEW-SAMPLES"
	FewAbove         Code = "TT-FEW-ABOVE"
	Censored         Code = "TT-CENSORED"
	OutOfRange       Code = "TT-OUT-OF-RANGE"
)

// The codes of the call policy (recommend.NewPolicy).
const (
	TimeoutAboveDeadline    Code = "TT-TIMEOUT-ABOVE-DEADLINE"
	PerTryNearMedian        Code = "TT-PER-TRY-NEAR-MEDIAN"
	NoRetriesFit            Code = "TT-NO-RETRIES-FIT"
	MethodNotIdempotent     Code = "TT-METHOD-NOT-IDEMPOTENT"
	RetryNeverSentOnly      Code = "TT-RETRY-NEVER-SENT-ONLY"
	MethodsMixed            Code = "TT-METHODS-MIXED"
	RetryOnNotIdempotent    Code = "TT-RETRY-ON-NOT-IDEMPOTENT"
	Retry500                Code = "TT-RETRY-500"
	NothingToRetry          Code = "TT-NOTHING-TO-RETRY"
	HedgeDelayTooLong       Code = "TT-HEDGE-DELAY-TOO-LONG"
	HedgeP999BeyondDeadline Code = "TT-HEDGE-P999-BEYOND-DEADLINE"
	HedgeConnections        Code = "TT-HEDGE-CONNECTIONS"
	HedgeNotIdempotent      Code = "TT-HEDGE-NOT-IDEMPOTENT"
	HedgeNotSafe            Code = "TT-HEDGE-NOT-SAFE"
	Amplification           Code = "TT-AMPLIFICATION"
	NoRetryBudget           Code = "TT-NO-RETRY-BUDGET"
)

// The codes of bucketed data (analysis.RunPrometheus), which replace
// LowerBound, LowerBoundPileUp, CensoredPileUp and Censored there.
const (
	NegativeLatency Code = "TT-NEGATIVE-LATENCY"
	BucketInf       Code = "TT-BUCKET-INF"
	BucketBeyond24h Code = "TT-BUCKET-BEYOND-24H"
	BucketCensored  Code = "TT-BUCKET-CENSORED"
	BucketRepair    Code = "TT-BUCKET-REPAIR"
	GroupFailed     Code = "TT-GROUP-FAILED"
	PrometheusNote  Code = "TT-PROMETHEUS-NOTE"
	ServerWarning   Code = "TT-SERVER-WARNING"
	RateShared      Code = "TT-RATE-SHARED"
)

// The codes of `tunetimeout check`: a config's values held against the
// data (analysis.Check).
const (
	CheckTimeoutCutsOff      Code = "TT-CHECK-TIMEOUT-CUTS-OFF"
	CheckTimeoutFits         Code = "TT-CHECK-TIMEOUT-FITS"
	CheckDefaultTimeout      Code = "TT-CHECK-DEFAULT-TIMEOUT"
	CheckNoTimeout           Code = "TT-CHECK-NO-TIMEOUT"
	CheckHangExhaustsPool    Code = "TT-CHECK-HANG-EXHAUSTS-POOL"
	CheckAttemptsDontFit     Code = "TT-CHECK-ATTEMPTS-DONT-FIT"
	CheckRetryNonIdempotent  Code = "TT-CHECK-RETRY-NON-IDEMPOTENT"
	CheckNoJitter            Code = "TT-CHECK-NO-JITTER"
	CheckRetryLayers         Code = "TT-CHECK-RETRY-LAYERS"
	CheckTimeoutInversion    Code = "TT-CHECK-TIMEOUT-INVERSION"
	CheckConnectTimeoutLong  Code = "TT-CHECK-CONNECT-TIMEOUT-LONG"
	CheckBulkheadBelowDemand Code = "TT-CHECK-BULKHEAD-BELOW-DEMAND"
	CheckNoBucketAtTimeout   Code = "TT-CHECK-NO-BUCKET-AT-TIMEOUT"
	CheckRetry500            Code = "TT-CHECK-RETRY-500"
)

// The notes of `tunetimeout check`: what was read and not checked
// (report.Check.Notes); they never fail a check.
const (
	CheckNoPolicy         Code = "TT-CHECK-NO-POLICY"
	CheckConfigNote       Code = "TT-CHECK-CONFIG-NOTE"
	CheckLayersUndeclared Code = "TT-CHECK-LAYERS-UNDECLARED"
)

// The codes of the herd (simulate --herd: simulate.RunHerd).
const (
	HerdBeyondDeadline    Code = "TT-HERD-BEYOND-DEADLINE"
	HerdBackoffCapNarrow  Code = "TT-HERD-BACKOFF-CAP-NARROW"
	HerdBackoffBaseNarrow Code = "TT-HERD-BACKOFF-BASE-NARROW"
)

// The codes of the call graph (report.NewCallGraph).
const (
	TimeoutInversion      Code = "TT-TIMEOUT-INVERSION"
	DeadlineNotPropagated Code = "TT-DEADLINE-NOT-PROPAGATED"
	CallOutlivesCaller    Code = "TT-CALL-OUTLIVES-CALLER"
	NoBudgetLeft          Code = "TT-NO-BUDGET-LEFT"
	RetryAmplification    Code = "TT-RETRY-AMPLIFICATION"
	DeadlineBudget        Code = "TT-DEADLINE-BUDGET"
)

// The codes of the input (the report's input.findings).
const (
	GroupsFolded            Code = "TT-GROUPS-FOLDED"
	GroupEmpty              Code = "TT-GROUP-EMPTY"
	NotRequests             Code = "TT-NOT-REQUESTS"
	TimesOutOfRange         Code = "TT-TIMES-OUT-OF-RANGE"
	OutsideWindow           Code = "TT-OUTSIDE-WINDOW"
	InputCutOff             Code = "TT-INPUT-CUT-OFF"
	DecoderNote             Code = "TT-DECODER-NOTE"
	OldHdrHistogramGo       Code = "TT-OLD-HDRHISTOGRAM-GO"
	FlagsNotForIntervalLogs Code = "TT-FLAGS-NOT-FOR-INTERVAL-LOGS"
	ForeignIntervalLog      Code = "TT-FOREIGN-INTERVAL-LOG"
	CoarseHistograms        Code = "TT-COARSE-HISTOGRAMS"
	SparseSummary           Code = "TT-SPARSE-SUMMARY"
	LogWindows              Code = "TT-LOG-WINDOWS"
	OneWindow               Code = "TT-ONE-WINDOW"
	StraddlingIntervals     Code = "TT-STRADDLING-INTERVALS"
	JaegerRead              Code = "TT-JAEGER-READ"
	JaegerNote              Code = "TT-JAEGER-NOTE"
	ClickHouseNote          Code = "TT-CLICKHOUSE-NOTE"
	NoTimeColumn            Code = "TT-NO-TIME-COLUMN"
	StdinReadOnce           Code = "TT-STDIN-READ-ONCE"
)

// defs declares every code, in the order of docs/findings.md. A summary
// names an option by its key in braces, {window}: Codes and Lookup write
// it as the CLI does (usage.Option's String), when they are called, after
// the CLI has said how (usage.Render).
var defs = []Def{
	{MaxBelowQuantile, Warning, "the {max} you set is below the measured quantile: the timeout cuts off more calls than asked"},
	{LowerBound, Warning, "censored calls lie at or below the quantile: it is only a lower bound"},
	{LowerBoundPileUp, Warning, "the quantile falls into a pile-up at an existing timeout: it is only a lower bound"},
	{CensoredPileUp, Warning, "many calls end at the largest value: an existing timeout cut them off"},
	{FewSamples, Warning, "fewer calls than needed to see one beyond the quantile"},
	{FewAbove, Warning, "fewer than 10 calls lie above the quantile: its confidence interval is wide"},
	{Censored, Info, "some calls were censored (cut off because slow) and are kept as lower bounds"},
	{OutOfRange, Warning, "samples outside the histogram's range (negative, or beyond 24h) were not recorded"},

	{TimeoutAboveDeadline, Warning, "the recommended timeout exceeds the deadline: the per-try timeout is lowered and cuts off more"},
	{PerTryNearMedian, Warning, "the per-try timeout is below twice the median: it fires on noise"},
	{NoRetriesFit, Warning, "no retry fits the deadline"},
	{MethodNotIdempotent, Warning, "the group's method is not idempotent although the call was marked idempotent"},
	{RetryNeverSentOnly, Info, "the call is not idempotent: only failures that prove the request was never sent are retried"},
	{MethodsMixed, Warning, "the group's calls mix idempotent and non-idempotent methods: none is retried beyond never-sent failures"},
	{RetryOnNotIdempotent, Warning, "retry conditions that may repeat an applied request, on a call that is not idempotent"},
	{Retry500, Warning, "500 is retried, though a deterministic bug returns it every time"},
	{NothingToRetry, Warning, "several attempts but no condition to retry on"},
	{HedgeDelayTooLong, Warning, "not hedged: the hedge delay is not below the most the call may take"},
	{HedgeP999BeyondDeadline, Warning, "with hedging, p99.9 is still beyond the deadline"},
	{HedgeConnections, Info, "hedging holds several connections per call during a hang"},
	{HedgeNotIdempotent, Warning, "not hedged: the call is not idempotent"},
	{HedgeNotSafe, Warning, "not hedged: the method is not safe (it writes), idempotent or not"},
	{Amplification, Warning, "retries at several layers multiply the calls to the bottom layer"},
	{NoRetryBudget, Warning, "retries without a retry budget multiply the load during an outage"},

	{NegativeLatency, Error, "buckets counted calls below zero latency: the exporter has a bug"},
	{BucketInf, Warning, "the quantile lies in the +Inf bucket: it is only a lower bound"},
	{BucketBeyond24h, Warning, "the quantile lies in a bucket bounded beyond 24h: it is only a lower bound"},
	{BucketCensored, Warning, "calls beyond the largest usable bucket bound: what a longer timeout cuts off is unknown"},
	{BucketRepair, Info, "buckets had to be repaired before they could be read; the repair field says which repair"},
	{GroupFailed, Warning, "a group's series could not be read and is left out"},
	{PrometheusNote, Info, "a note of the bucketed source (Prometheus, OTLP metrics) on what it read"},
	{ServerWarning, Warning, "the server's own warning or info on the query (Prometheus's warnings and infos)"},
	{RateShared, Info, "the {rate} is shared among the groups by their share of the calls"},

	{CheckTimeoutCutsOff, Error, "a configured timeout cuts off more calls than {false-timeouts} allows"},
	{CheckTimeoutFits, Info, "a configured timeout cuts off no more calls than {false-timeouts} allows"},
	{CheckDefaultTimeout, Warning, "no timeout is set: the target's default is in force"},
	{CheckNoTimeout, Error, "no timeout bounds the call: a hang holds every call until the caller gives up"},
	{CheckHangExhaustsPool, Error, "a hang at the configured timeout exhausts the pool (Little's law at the peak rate)"},
	{CheckAttemptsDontFit, Warning, "the attempts cannot all run into their per-try timeout within the overall timeout"},
	{CheckRetryNonIdempotent, Error, "non-idempotent requests are retried after failures that may have been applied"},
	{CheckNoJitter, Warning, "retries go at once, without backoff or jitter"},
	{CheckRetryLayers, Warning, "several configs of one call chain retry: their attempts multiply at the bottom"},
	{CheckTimeoutInversion, Warning, "along a {topology} path, a callee's configs wait at least as long as its caller waits for it"},
	{CheckConnectTimeoutLong, Warning, "the connect timeout is longer than a connect inside a datacenter needs"},
	{CheckBulkheadBelowDemand, Warning, "a limit of calls in flight is below normal demand: calls are turned away on a normal day"},
	{CheckRetry500, Warning, "500 is retried: a deterministic bug returns it every time, and it may follow a half-applied request"},
	{CheckNoBucketAtTimeout, Warning, "bucketed data have no bound at the configured timeout: the share it cuts off is only bracketed"},
	{CheckNoPolicy, Info, "a config file holds no timeout or retry policy any reader of its format knows"},
	{CheckConfigNote, Info, "a config reader's note on an object: what it read and does not model"},
	{CheckLayersUndeclared, Info, "configs not declared a chain retry the calls of the data: what their attempts would multiply to if they were layers"},

	{HerdBeyondDeadline, Warning, "the crowd needs longer than the deadline to be served once: no backoff within one call spreads it"},
	{HerdBackoffCapNarrow, Warning, "the backoff cap is narrower than the window the crowd needs: no retry of the herd is ever spread enough"},
	{HerdBackoffBaseNarrow, Warning, "the backoff base is narrower than the crowd needs under its jitter: the first retries collide"},

	{TimeoutInversion, Warning, "a service's timeout downstream is not shorter than its caller's towards it: the caller gives up first"},
	{DeadlineNotPropagated, Warning, "callees worked on after their caller's client span ended: the caller's deadline does not reach them"},
	{CallOutlivesCaller, Warning, "a service's outgoing calls ran on after the request they were made for had ended: nobody waited for them"},
	{NoBudgetLeft, Warning, "calls were made with less of the root's deadline left than their callee's median: work that will mostly time out, or that nobody waits for"},
	{RetryAmplification, Warning, "attempts multiply along a path of the call graph: a callee gets more than 3 attempts per call of the root"},
	{DeadlineBudget, Warning, "the recommended timeouts along a path of the call graph add up to more than the {deadline} at its root"},

	{GroupsFolded, Info, "groups beyond {max-groups} were folded into \"other\""},
	{GroupEmpty, Warning, "a group has no call usable for latency and is left out"},
	{NotRequests, Info, "lines that are a server's own messages, not requests, were skipped"},
	{TimesOutOfRange, Warning, "records with a time outside 1970-2262: their latency is used, their time is not"},
	{OutsideWindow, Info, "calls outside {from}/{to} were left out"},
	{InputCutOff, Warning, "a compressed input ends early (the file is cut off)"},
	{DecoderNote, Info, "a note of the input format's decoder on how it read the input"},
	{OldHdrHistogramGo, Info, "an interval log of hdrhistogram-go before v1.3.0: its times are read as it wrote them"},
	{FlagsNotForIntervalLogs, Info, "{by}, {latency}, {include-errors} and the log format do not apply to interval logs"},
	{ForeignIntervalLog, Info, "an interval log another tool wrote: the unit is assumed, rates come from its intervals"},
	{CoarseHistograms, Info, "intervals hold histograms coarser than tunetimeout's"},
	{SparseSummary, Info, "a summary so sparse it is hardly smaller than its log"},
	{LogWindows, Info, "without {window}, interval logs are analysed window by window at their own interval"},
	{OneWindow, Info, "the calls fall in a single {window}, or none has a time: there are no windows to compare"},
	{StraddlingIntervals, Info, "intervals of an interval log straddle two windows: each is counted in the window of its start"},
	{JaegerRead, Info, "how many traces of which service were read from Jaeger, over which period, in how many searches"},
	{JaegerNote, Info, "a note of the Jaeger source on what it read (traces answered twice, more than {max-traces}, searches that hit {limit})"},
	{ClickHouseNote, Info, "a note of the ClickHouse source on how it queried"},
	{NoTimeColumn, Info, "the ClickHouse rows have no {time} column: the rates are not measured"},
	{StdinReadOnce, Info, "spans read from standard input are read once: the call-graph checks that read them again are not made"},
}

// Codes returns every declared code, in the order of docs/findings.md.
func Codes() []Def {
	out := make([]Def, len(defs))
	for i, d := range defs {
		out[i] = d.rendered()
	}
	return out
}

// Lookup returns the declaration of c.
func Lookup(c Code) (Def, bool) {
	for _, d := range defs {
		if d.Code == c {
			return d.rendered(), true
		}
	}
	return Def{}, false
}

// rendered is d with the options its summary names ({key}) written as
// the CLI writes them.
func (d Def) rendered() Def {
	d.Summary = usage.Expand(d.Summary)
	return d
}
