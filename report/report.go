// Package report turns analysis results into what people and other tools
// read: a text report, a JSON document (a stable contract, documented in the
// README), and later Markdown, HTML and client configuration.
package report

import (
	"io"
	"slices"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// Report is the result of one analysis. Its JSON field names are a contract
// with other tools: keep them stable. Durations are seconds as floats.
type Report struct {
	Input  Input   `json:"input"`
	Groups []Group `json:"groups"`
	// SharedPool is the hang of the whole dependency when several groups
	// share --pool: null without a pool or with one group.
	SharedPool *SharedPool `json:"shared_pool"`
	// CallGraph is the graph of the groups when they are edges between
	// services (spans grouped by caller and callee); absent otherwise.
	CallGraph *CallGraph `json:"call_graph,omitempty"`
	// Herd is the herd scenario (--herd, --clients); absent otherwise.
	Herd *Herd `json:"herd,omitempty"`
	// Prometheus describes the live source; absent for files.
	Prometheus *PrometheusSource `json:"prometheus,omitempty"`
	// Summary is the summary table, riskiest group first (Summarize):
	// written by WriteJSON when there are several groups.
	Summary []SummaryRow `json:"summary,omitempty"`
	// Snippets are client configuration snippets for the formats that
	// carry them inside the document (EmbedsSnippets); the command fills
	// them from --emit before writing. Not part of the JSON.
	Snippets []Snippet `json:"-"`
}

// Snippet is one rendered client configuration (package target).
type Snippet struct {
	Target string   // as given to --emit: "envoy"
	File   string   // the file --emit-dir writes: "envoy.yaml"
	Notes  []string // the explanation, for formats without comments (gRPC's JSON)
	Text   string
	// Language names the snippet's language for a code fence's
	// highlighting ("yaml"), as its target says; "" for none.
	Language string
}

// Input describes what was read and what could not be used.
type Input struct {
	Files []string `json:"files"`
	// Records is how many data rows or lines were read, bad ones included.
	Records int64 `json:"records"`
	// BadRecords is how many could not be parsed; BadExamples shows the first few.
	BadRecords  int64    `json:"bad_records"`
	BadExamples []string `json:"bad_examples"`
	// OutsideRange is how many records lay outside --from/--to (or, in
	// interval logs, how many calls their intervals held).
	OutsideRange int64 `json:"outside_range,omitempty"`
	// NotRequests counts, by what they are, the lines that are a server's
	// own messages rather than requests ("haproxy proxy stopped"): skipped,
	// and in neither Records nor BadRecords.
	NotRequests map[string]int64 `json:"not_requests,omitempty"`
	// TimesOutOfRange counts the records whose time lies outside 1970 to
	// 2262 (time.Duration's range from the Unix epoch): their latency is
	// used, their time is not (no rate is measured from it).
	TimesOutOfRange int64 `json:"times_out_of_range,omitempty"`
	// Formats are the input formats the files were read as, each once,
	// in the order first met: "csv", "otlp".
	Formats []string `json:"formats,omitempty"`
	// Notes are facts about the input worth knowing (how a rate was split, ...).
	Notes []string `json:"notes"`
	// Findings are the notes as findings, with their codes and numbers
	// (docs/findings.md); Notes are their messages, in order, after any
	// note given as a string alone (Note adds both). Absent from reports
	// written before findings existed.
	Findings []Finding `json:"findings"`
}

// Note adds f to the input's findings and its message to the notes.
func (in *Input) Note(f Finding) {
	in.Findings = append(in.Findings, f)
	in.Notes = append(in.Notes, f.Message)
}

// Drop takes the findings of code c out of in, each with its note: the
// note Note added with it, found by its place, never by its words. The
// notes end with the findings' messages, in order (Note adds both; a note
// given as a string alone comes before them), so the note of Findings[i]
// is Notes[len(Notes)-len(Findings)+i].
func (in *Input) Drop(c finding.Code) {
	alone := len(in.Notes) - len(in.Findings)
	for i := len(in.Findings) - 1; i >= 0; i-- {
		if in.Findings[i].Code != c {
			continue
		}
		in.Findings = slices.Delete(in.Findings, i, i+1)
		if alone >= 0 {
			in.Notes = slices.Delete(in.Notes, alone+i, alone+i+1)
		}
	}
}

// Group is the analysis of one group of calls.
type Group struct {
	Name string `json:"name"`
	// Labels are the group's identity where it is a set of label values
	// (prometheus --by: the labels its series have, a missing one absent);
	// Name is written from them, and rules reads them, not the name.
	Labels map[string]string `json:"labels,omitempty"`
	// Samples counts the observations used for latency, censored ones included.
	Samples int64 `json:"samples"`
	// Censored counts the samples that are lower bounds ("took at least").
	Censored int64 `json:"censored"`
	// Excluded counts the samples not used for latency, by reason.
	Excluded       map[string]int64 `json:"excluded"`
	MeanSeconds    float64          `json:"mean_seconds"`
	Percentiles    []Percentile     `json:"percentiles"`
	Recommendation Recommendation   `json:"recommendation"`
	Candidates     []Candidate      `json:"candidates"`
	LittlesLaw     LittlesLaw       `json:"littles_law"`
	Policy         *Policy          `json:"policy"`
	// Distribution is the latency histogram in log-spaced bins, for plots.
	Distribution *Distribution `json:"distribution,omitempty"`
	// Buckets is the bucket view of bucketed data (Prometheus); absent
	// for calls read one by one.
	Buckets *Buckets `json:"buckets,omitempty"`
	// Windows are the group's windows of --window, in time order, and
	// WorstWindow the one the timeout must survive; absent without
	// --window.
	Windows     []Window     `json:"windows,omitempty"`
	WorstWindow *WorstWindow `json:"worst_window,omitempty"`
	// Profile is the windows pooled by hour of day or of week (--profile).
	Profile *Profile `json:"profile,omitempty"`
	// WindowCallsNeeded is, when no window is worse beyond the noise, about
	// how many calls a window would need for its quantile's interval to be
	// within --window-precision of the value, were its latency shaped as
	// the whole period's (0: not computed; -1: more than the whole period
	// holds).
	WindowCallsNeeded int64 `json:"window_calls_needed,omitempty"`
	// Findings are the group's warnings with their codes and numbers
	// (docs/findings.md): the recommendation's, then the call policy's;
	// recommendation.warnings and policy.warnings are their messages.
	// Absent from reports written before findings existed.
	Findings []Finding `json:"findings"`
}

// Percentile is one point of the latency distribution.
type Percentile struct {
	Quantile float64 `json:"quantile"`
	Seconds  float64 `json:"seconds"`
	// LowerBound is true when censored samples make this only a lower bound.
	LowerBound bool `json:"lower_bound"`
}

// Recommendation is the recommended timeout with its reasons.
type Recommendation struct {
	Quantile              float64  `json:"quantile"`
	BaseSeconds           float64  `json:"base_seconds"`
	LowerBound            bool     `json:"lower_bound"`
	Interval              Interval `json:"interval"`
	TimeoutSeconds        float64  `json:"timeout_seconds"`
	CutOffFraction        float64  `json:"cut_off_fraction"`
	ConnectTimeoutSeconds *float64 `json:"connect_timeout_seconds"`
	// ConnectsMeasured counts the real connects measured; ReusedConnects
	// the connect times of 0 (requests on kept-alive connections), which
	// are not connects.
	ConnectsMeasured int64    `json:"connects_measured"`
	ReusedConnects   int64    `json:"reused_connects"`
	Steps            []Step   `json:"steps"`
	Warnings         []string `json:"warnings"`
}

// Interval is the confidence interval of the measured quantile.
type Interval struct {
	Confidence  float64  `json:"confidence"`
	LowSeconds  float64  `json:"low_seconds"`
	HighSeconds *float64 `json:"high_seconds"` // null: beyond the largest sample
	Above       int64    `json:"samples_above"`
}

// Step is one rule applied on the way to the timeout.
type Step struct {
	Rule    string  `json:"rule"`
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason"`
}

// Candidate is one timeout and what it costs.
type Candidate struct {
	TimeoutSeconds     float64  `json:"timeout_seconds"`
	CutOffFraction     float64  `json:"cut_off_fraction"`
	InFlightDuringHang *float64 `json:"in_flight_during_hang"`
	PoolMultiple       *float64 `json:"pool_multiple"`
}

// LittlesLaw is what a hang costs. Null fields: the input does not allow them.
type LittlesLaw struct {
	RatePerSecond       *float64 `json:"rate_per_second"`
	PeakRatePerSecond   *float64 `json:"peak_rate_per_second"`
	BusiestSecond       *float64 `json:"busiest_second_calls"`
	RateSource          string   `json:"rate_source"` // "measured", "flag", "unknown"
	Pool                *int     `json:"pool"`
	InFlightNormal      *float64 `json:"in_flight_normal"`
	InFlightPeak        *float64 `json:"in_flight_peak"` // peak rate x mean latency: what the bulkhead is sized for
	InFlightDuringHang  *float64 `json:"in_flight_during_hang"`
	PoolExhausted       *bool    `json:"pool_exhausted"`
	SecondsToExhaustion *float64 `json:"seconds_to_exhaustion"`
	Bulkhead            *int     `json:"bulkhead"`
	HystrixBulkhead     *int     `json:"hystrix_bulkhead"`
	Verdict             string   `json:"verdict"`
}

// SharedPool is what a hang of the dependency costs the pool its groups
// share (docs/method.md#6-littles-law): they hang together, so their calls in flight
// add up. Null fields: the input does not allow them (no rate, no bulkhead).
type SharedPool struct {
	Pool   int `json:"pool"`
	Groups int `json:"groups"` // how many groups share it
	// InFlightDuringHang is the sum over the groups of hang rate x what each
	// call waits (littles_law.in_flight_during_hang of each group).
	InFlightDuringHang  *float64 `json:"in_flight_during_hang"`
	PoolExhausted       *bool    `json:"pool_exhausted"`
	SecondsToExhaustion *float64 `json:"seconds_to_exhaustion"`
	BulkheadsTotal      *int     `json:"bulkheads_total"`
	Verdict             string   `json:"verdict"`
}

// Writer renders a report in one format.
type Writer func(w io.Writer, r *Report) error

// ptr returns a pointer to v, for the nullable JSON fields.
func ptr[T any](v T) *T { return &v }
