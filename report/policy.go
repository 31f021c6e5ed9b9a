package report

// Policy is the call policy of one group: the per-try timeout that fits the
// caller's deadline, the retries, the backoff and the retry budget
// (DOMAIN.md section 3). It is always present; without --deadline and
// --attempts it is one attempt at the recommended timeout.
type Policy struct {
	DeadlineSeconds      *float64 `json:"deadline_seconds"` // null: no deadline given
	RequestedAttempts    int      `json:"requested_attempts"`
	Attempts             int      `json:"attempts"` // attempts that fit the deadline in the worst case
	PerTryTimeoutSeconds float64  `json:"per_try_timeout_seconds"`
	// CutOffFraction is the false-timeout rate the per-try timeout really gives.
	CutOffFraction     float64  `json:"cut_off_fraction"`
	BackoffBaseSeconds float64  `json:"backoff_base_seconds"`
	BackoffCapSeconds  float64  `json:"backoff_cap_seconds"`
	Jitter             string   `json:"jitter"` // full, equal, decorrelated
	WorstCaseSeconds   float64  `json:"worst_case_seconds"`
	RetryOn            []string `json:"retry_on"`     // e.g. connect-failure, timeout, 408, 429, 502, 503, 504
	RetryBudget        *float64 `json:"retry_budget"` // fraction of requests that may be retried; null: none
	Idempotent         bool     `json:"idempotent"`
	Layers             int      `json:"layers"`
	Amplification      int      `json:"amplification"` // attempts ^ layers
	// InFlightDuringHang is Little's law during a hang with the retries and
	// backoff: peak rate x (attempts x per-try timeout + total backoff).
	InFlightDuringHang *float64    `json:"in_flight_during_hang"`
	Steps              []Step      `json:"steps"`
	Warnings           []string    `json:"warnings"`
	Simulation         *Simulation `json:"simulation"` // null when not simulated
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
	P99Seconds         float64 `json:"p99_seconds"`
}
