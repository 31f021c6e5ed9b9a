package report

import (
	"io"
)

// Policy is the call policy of one group: the per-try timeout that fits the
// caller's deadline, the retries, the backoff and the retry budget
// (docs/method.md#7-retries). It is always present; without --deadline and
// --attempts it is one attempt at the recommended timeout.
type Policy struct {
	DeadlineSeconds   *float64 `json:"deadline_seconds"` // null: no deadline given
	RequestedAttempts int      `json:"requested_attempts"`
	// Attempts is how many attempts the policy allows within the deadline:
	// the requested ones that are sure to be sent when attempts fail fast.
	Attempts             int     `json:"attempts"`
	PerTryTimeoutSeconds float64 `json:"per_try_timeout_seconds"`
	// CutOffFraction is the false-timeout rate the per-try timeout really gives.
	CutOffFraction     float64 `json:"cut_off_fraction"`
	BackoffBaseSeconds float64 `json:"backoff_base_seconds"`
	BackoffCapSeconds  float64 `json:"backoff_cap_seconds"`
	Jitter             string  `json:"jitter"` // full, equal, decorrelated
	// ExpectedBackoffSeconds and LargestBackoffSeconds are the expected and
	// the largest total wait between the attempts under the jitter's own
	// schedule.
	ExpectedBackoffSeconds float64 `json:"expected_backoff_seconds"`
	LargestBackoffSeconds  float64 `json:"largest_backoff_seconds"`
	// WorstCaseSeconds is the longest the caller can wait: attempts x
	// per-try timeout + (attempts-1) x cap, at most the deadline.
	WorstCaseSeconds float64 `json:"worst_case_seconds"`
	// StaticAttempts is how many attempts fit the deadline when every one
	// times out in full and every wait is at the cap: what clients with no
	// bound over all attempts (HAProxy, resilience4j) may make.
	StaticAttempts         int      `json:"static_attempts"`
	StaticWorstCaseSeconds float64  `json:"static_worst_case_seconds"`
	HangAttempts           int      `json:"hang_attempts"`         // attempts a request sends when the dependency hangs
	HangWaitSeconds        float64  `json:"hang_wait_seconds"`     // what it waits then in all, at most the deadline
	HangBackoffSeconds     float64  `json:"hang_backoff_seconds"`  // of which backoff (expected)
	FastFailureAttempts    int      `json:"fast_failure_attempts"` // attempts sent when every attempt fails fast
	MinUsefulTrySeconds    float64  `json:"min_useful_try_seconds"`
	RetryOn                []string `json:"retry_on"`     // connect-failure, refused-stream, timeout, status codes
	RetryBudget            *float64 `json:"retry_budget"` // fraction of requests that may be retried; null: none
	Idempotent             bool     `json:"idempotent"`
	// Method is the group's request method, from which Idempotent was
	// taken; null when the grouping has none.
	Method *string `json:"method"`
	// Methods are the request methods of the group's calls, sorted, when
	// the data say them ("other": a method outside RFC 9110's); null when
	// they do not.
	Methods []string `json:"methods"`
	// IdempotentSource says what decided Idempotent: "method" (the group's
	// method, --by method), "methods" (the methods its calls had: every one
	// idempotent, or not), "flag" (--idempotent, the data saying no
	// method), "none" (nothing marked it idempotent).
	IdempotentSource string `json:"idempotent_source"`
	Layers           int    `json:"layers"`
	Amplification    int    `json:"amplification"` // attempts ^ layers
	// InFlightDuringHang is Little's law during a hang with the retries and
	// backoff: peak rate x hang_wait_seconds.
	InFlightDuringHang *float64    `json:"in_flight_during_hang"`
	Hedge              *Hedge      `json:"hedge"` // null: no hedging
	Steps              []Step      `json:"steps"`
	Warnings           []string    `json:"warnings"`
	Simulation         *Simulation `json:"simulation"` // null when not simulated
	// Metastability is the closed loop under --trigger; absent without it.
	Metastability *Metastability `json:"metastability,omitempty"`
}

// Hedge is the hedging of an idempotent call (--hedge): another request
// when none has answered after delay_seconds, up to attempts in all. The
// latencies assume independent attempts drawn from the measured
// distribution.
type Hedge struct {
	Quantile          float64 `json:"quantile"` // the quantile the delay is taken at
	DelaySeconds      float64 `json:"delay_seconds"`
	Attempts          int     `json:"attempts"`
	ExtraLoadFraction float64 `json:"extra_load_fraction"` // extra requests per call: 0.05 = 5 % more
	P99Seconds        float64 `json:"p99_seconds"`         // end to end, with hedging
	P999Seconds       float64 `json:"p999_seconds"`
}

// Simulation is the replay of the measured latency through the policy.
type Simulation struct {
	Seed      uint64     `json:"seed"`
	Requests  int        `json:"requests"`
	Scenarios []Scenario `json:"scenarios"`
}

// Scenario is one simulated condition of the dependency.
type Scenario struct {
	Name               string  `json:"name"`        // "normal", "fail 20%", "hang"
	FailRate           float64 `json:"fail_rate"`   // share of attempts that fail fast
	Hang               bool    `json:"hang"`        // the dependency stops answering
	WithBudget         bool    `json:"with_budget"` // the retry budget applies
	SuccessFraction    float64 `json:"success_fraction"`
	AttemptsPerRequest float64 `json:"attempts_per_request"` // the load multiplier
	P50Seconds         float64 `json:"p50_seconds"`          // end to end, successful requests
	P99Seconds         float64 `json:"p99_seconds"`          // 0 when no request succeeded
}

// policyReport is the JSON of the policy-only report: the input and, per
// group, its name, its samples and its policy; the field names are those
// of Report.
type policyReport struct {
	Input  Input         `json:"input"`
	Groups []policyGroup `json:"groups"`
	Herd   *Herd         `json:"herd,omitempty"`
}

type policyGroup struct {
	Name    string  `json:"name"`
	Samples int64   `json:"samples"`
	Policy  *Policy `json:"policy"`
}

// WritePolicyJSON writes the input and each group's call policy with its
// simulation as indented JSON.
func WritePolicyJSON(w io.Writer, r *Report) error {
	out := policyReport{Input: r.Input, Groups: []policyGroup{}, Herd: r.Herd}
	for _, g := range r.Groups {
		out.Groups = append(out.Groups, policyGroup{Name: g.Name, Samples: g.Samples, Policy: g.Policy})
	}
	return writeJSON(w, out)
}
