package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/progress"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

func newSimulate() *cobra.Command {
	return withTopics(newFileCommand(&cobra.Command{
		Use:   "simulate [FILE...]",
		Short: "Replay latency through a call policy: deadline, retries, budget",
		Long: `simulate reads latencies like analyze (same inputs and flags), fits a call
policy to the caller's deadline and replays the measured latency through it.
It prints only the policy and the simulation: what a hang, fast failures and
a retry budget do to the calls, with and without the policy.

With --trigger: a closed loop of the dependency through a trigger, and
whether it recovers once the trigger is gone (docs/metastability.md).`,
		Example: `  # The README's worked example with a 1s deadline and 3 attempts
  tunetimeout simulate testdata/mixture.csv --rate 400 --pool 200 \
      --deadline 1s --attempts 3 --retry-budget 10% --idempotent

  # Does a 3x slowdown for 60s leave the dependency stuck (metastable)?
  tunetimeout simulate testdata/mixture.csv --rate 400 --capacity 444 \
      --deadline 1s --attempts 3 --idempotent --trigger slow:3x:60s

  # Per method: GET and PUT are retried after a timeout, POST only when
  # never sent
  tunetimeout simulate access.log --by route,method --deadline 2s --attempts 3`,
	}, report.LookupPolicy, true), "policy", "formats", "status", "timeout", "targets")
}

// runFiles is the body of the commands that analyse files (analyze,
// simulate): it parses the flags into o, runs the analysis and writes the
// report in the -o format, looked up with lookup.
func runFiles(cmd *cobra.Command, args []string, o analysis.Options, f analyzeFlags, pf policyFlags,
	lookup func(string) (report.Writer, error)) error {
	if err := f.apply(cmd.Flags(), &o); err != nil {
		return usageError{err}
	}
	if err := pf.apply(cmd, &o); err != nil {
		return usageError{err}
	}
	write, err := lookup(f.format)
	if err != nil {
		return usageError{formatHint(err, f.format)}
	}
	if err := refuseInputAsOutput("--output", f.output, args); err != nil {
		return usageError{err}
	}
	o.Inputs = args
	if len(args) == 0 && o.Herd.Clients > 0 && o.Herd.CapacityPerSecond > 0 {
		// The herd needs no data when its crowd and capacity are given.
		r, err := analysis.RunHerdOnly(cmd.Context(), o)
		if err != nil {
			return err
		}
		return emitReport(cmd, f.output, write, r)
	}
	if errOut := cmd.ErrOrStderr(); !f.quiet && progress.IsTerminal(errOut) {
		o.Progress = progress.New(errOut)
	}
	stdinNotice(cmd, args)
	r, err := analysis.Run(cmd.Context(), o, cmd.InOrStdin())
	if err != nil {
		return err
	}
	return emitReport(cmd, f.output, write, r)
}

// policyFlags holds the raw values of the call policy flags that need
// parsing; the others go straight into analysis.Options.
type policyFlags struct {
	jitter, retryBudget, failRate, hedgeAt string
	headroom, rejectCost                   string
	trigger                                string
	retryOn, idempotentMethods             []string
}

// addPolicyFlags registers the call policy and simulation flags.
func addPolicyFlags(cmd *cobra.Command, o *analysis.Options, pf *policyFlags) {
	fl := cmd.Flags()
	fl.DurationVar(&o.Policy.Deadline, "deadline", 0, "the caller's deadline over all attempts, e.g. 1s (default: none)")
	fl.IntVar(&o.Policy.Attempts, "attempts", 1, "most attempts per request, the first included")
	fl.DurationVar(&o.Policy.BackoffBase, "backoff-base", recommend.DefaultBackoffBase, "first backoff window (Envoy's default; gRPC has none)")
	fl.DurationVar(&o.Policy.BackoffCap, "backoff-cap", recommend.DefaultBackoffCap, "largest backoff wait; 10 x --backoff-base when only that is given (Envoy's rule)")
	fl.StringVar(&pf.jitter, "jitter", string(recommend.JitterFull), "backoff jitter: "+jitterNames())
	fl.StringVar(&pf.retryBudget, "retry-budget", "", "share of requests that may be retried, e.g. 10% (default: no budget)")
	fl.StringSliceVar(&pf.retryOn, "retry-on", nil, "what to retry: connect-failure, refused-stream, timeout and status codes (default: "+
		strings.Join(recommend.DefaultRetryOn, ", ")+" for idempotent calls, "+strings.Join(recommend.NeverSent, ", ")+" for others)")
	fl.BoolVar(&o.Policy.Idempotent, "idempotent", false, "the calls are safe to repeat (GET, PUT, DELETE, an idempotency key): timeouts and 5xx may be retried; without it only failures that prove the request was never sent are (RFC 9110 section 9.2.2). Where the input says each call's method, the methods decide instead")
	fl.StringSliceVar(&pf.idempotentMethods, "idempotent-methods", recommend.IdempotentMethods, "the methods that are idempotent, for a group's method (--by method) or the methods of its calls in the input (add POST when every POST carries an idempotency key)")
	fl.BoolVar(&o.Policy.Hedge, "hedge", false, "hedge idempotent calls: another request when none has answered after the --hedge-at quantile, up to --attempts (2 to 5) in all")
	fl.StringVar(&pf.hedgeAt, "hedge-at", "p95", "the quantile of the measured latency the hedge delay is taken at: p95, p90, p99")
	fl.IntVar(&o.Policy.Layers, "layers", 1, "layers of the call chain that retry like this (amplification: attempts ^ layers)")
	fl.StringVar(&pf.failRate, "fail-rate", "20%", "share of attempts failing fast in the simulation's failing scenario")
	fl.Uint64Var(&o.Simulate.Seed, "seed", 1, "seed of the simulation: the same seed gives the same figures")
	fl.IntVar(&o.Herd.Clients, "herd", 0, "simulate this many clients failing at once and retrying (the herd)")
	fl.IntVar(&o.Herd.ClientInstances, "clients", 0, "the herd is this many client instances x their calls in flight at the peak")
	fl.Float64Var(&o.Herd.CapacityPerSecond, "capacity", 0, "calls/s the dependency serves: the herd (default: --headroom x the busiest second) and, with --trigger (analyze, simulate), its workers (capacity x the mean latency)")
	fl.StringVar(&pf.headroom, "headroom", "50%", "the dependency's spare capacity, a share of its busiest second (without --capacity)")
	fl.StringVar(&pf.rejectCost, "reject-cost", "5%", "the share of a call's work a rejection costs the dependency")
	fl.IntVar(&o.Simulate.Requests, "requests", simulate.DefaultRequests, "requests per simulated scenario")
	complete(cmd, "jitter", jitterList()...)
	complete(cmd, "hedge-at", "p90", "p95", "p99")
	completeList(cmd, "retry-on", recommend.DefaultRetryOn...)
	completeList(cmd, "idempotent-methods", append(slices.Clone(recommend.IdempotentMethods), "POST", "PATCH")...)
}

// addLoopFlags registers the closed loop's flags (--trigger and the
// dependency's), on analyze and simulate only: a closed loop with its
// sweep and cure takes seconds of CPU per group, too much for every
// cycle of watch or every source's query.
func addLoopFlags(cmd *cobra.Command, o *analysis.Options, pf *policyFlags) {
	fl := cmd.Flags()
	fl.StringVar(&pf.trigger, "trigger", "", "simulate the dependency in a closed loop under a trigger and say whether it recovers: slow:3x:60s (service times x3 for 60s), outage:30s (every call fails fast), spike:2x:30s (arrivals x2)")
	fl.DurationVar(&o.Loop.TriggerAt, "trigger-at", simulate.DefaultTriggerAt, "when the trigger starts in the closed loop's run")
	fl.DurationVar(&o.Loop.Duration, "duration", simulate.DefaultLoopDuration, "the closed loop's simulated run")
	fl.DurationVar(&o.Loop.RecoverWithin, "recover-within", simulate.DefaultRecoverWithin, "how soon after the trigger ends the dependency must be back to normal")
	fl.IntVar(&o.Loop.Workers, "workers", 0, "calls the dependency serves at once in the closed loop (default: Little's law, the rate x the mean latency at 90 % busy; or from --capacity)")
	fl.IntVar(&o.Loop.Queue, "queue", 0, "most calls waiting at the dependency in the closed loop; a full queue answers 503 (default: unbounded, as most servers are)")
	fl.BoolVar(&o.Loop.DropExpired, "drop-expired", false, "the dependency drops calls whose caller already gave up (most servers do not know)")
	complete(cmd, "trigger", "slow:3x:60s", "outage:30s", "spike:2x:30s")
}

// apply parses the policy flags into o and checks the policy options, so a
// bad value is a usage error before any input is read.
func (pf policyFlags) apply(cmd *cobra.Command, o *analysis.Options) error {
	fl := cmd.Flags()
	if err := pf.applyRetry(fl, o); err != nil {
		return err
	}
	if err := pf.applyHerd(o); err != nil {
		return err
	}
	if err := pf.applyLoop(fl, o); err != nil {
		return err
	}
	if !o.Herd.Asked() && (fl.Changed("headroom") || fl.Changed("reject-cost") || (fl.Changed("capacity") && o.Loop.Trigger == nil)) {
		return errors.New("--capacity, --headroom and --reject-cost describe the herd: give --herd or --clients too (or --trigger, for --capacity)")
	}
	var err error
	if o.Simulate.FailRate, err = parseFailRate(pf.failRate); err != nil {
		return fmt.Errorf("--fail-rate: %w", err)
	}
	if o.Simulate.Requests < 1 || o.Simulate.Requests > simulate.MaxRequests {
		return fmt.Errorf("--requests: %d must lie between 1 and %d", o.Simulate.Requests, simulate.MaxRequests)
	}
	return checkPolicy(fl, o.Policy)
}

// applyRetry parses the flags of the retries into o.Policy: jitter and
// backoff, the budget, what to retry, the hedge.
func (pf policyFlags) applyRetry(fl *pflag.FlagSet, o *analysis.Options) error {
	var err error
	if o.Policy.Jitter, err = recommend.ParseJitter(pf.jitter); err != nil {
		return fmt.Errorf("--jitter: %w", err)
	}
	if fl.Changed("backoff-base") && !fl.Changed("backoff-cap") {
		o.Policy.BackoffCap = 0 // 10 x the base
	}
	o.Policy.RetryBudget = 0
	if b := strings.TrimSpace(pf.retryBudget); b != "" && b != "0" && b != "0%" {
		if o.Policy.RetryBudget, err = recommend.ParsePercent(b); err != nil {
			return fmt.Errorf("--retry-budget: %w", err)
		}
	}
	o.Policy.RetryOn = nil // the default for each group's idempotency
	if fl.Changed("retry-on") {
		o.Policy.RetryOn = append([]string{}, pf.retryOn...)
	}
	o.Policy.IdempotentMethods = append([]string{}, pf.idempotentMethods...)
	if o.Policy.HedgeAt, err = parseQuantileName(pf.hedgeAt); err != nil {
		return fmt.Errorf("--hedge-at: %w", err)
	}
	if fl.Changed("hedge-at") && !o.Policy.Hedge {
		return errors.New("--hedge-at: give --hedge too")
	}
	return nil
}

// applyHerd parses the herd's flags into o.Herd.
func (pf policyFlags) applyHerd(o *analysis.Options) error {
	var err error
	if o.Herd.Headroom, err = recommend.ParsePercent(pf.headroom); err != nil {
		return fmt.Errorf("--headroom: %w", err)
	}
	if o.Herd.RejectCost, err = parseShare(pf.rejectCost); err != nil {
		return fmt.Errorf("--reject-cost: %w", err)
	}
	if o.Herd.Clients < 0 || o.Herd.Clients > simulate.MaxHerd {
		return fmt.Errorf("--herd: %d must lie between 1 and %d", o.Herd.Clients, simulate.MaxHerd)
	}
	if o.Herd.ClientInstances < 0 || (o.Herd.Clients > 0 && o.Herd.ClientInstances > 0) {
		return errors.New("--clients: give it or --herd, not both")
	}
	if o.Herd.CapacityPerSecond < 0 {
		return errors.New("--capacity must be positive")
	}
	return nil
}

// applyLoop parses the closed loop's flags into o.Loop: --trigger and the
// dependency's.
func (pf policyFlags) applyLoop(fl *pflag.FlagSet, o *analysis.Options) error {
	o.Loop.Trigger = nil
	if pf.trigger != "" {
		t, err := simulate.ParseTrigger(pf.trigger)
		if err != nil {
			return fmt.Errorf("--trigger: %w", err)
		}
		o.Loop.Trigger = &t
		o.Loop.CapacityPerSecond = o.Herd.CapacityPerSecond
	} else {
		for _, n := range []string{"trigger-at", "duration", "recover-within", "workers", "queue", "drop-expired"} {
			if fl.Changed(n) {
				return fmt.Errorf("--%s describes the closed loop: give --trigger too", n)
			}
		}
	}
	if o.Loop.Workers < 0 || o.Loop.Workers > simulate.MaxLoopWorkers {
		return fmt.Errorf("--workers: %d must lie between 1 and %d", o.Loop.Workers, simulate.MaxLoopWorkers)
	}
	if o.Loop.Queue < 0 || o.Loop.Queue > simulate.MaxQueue {
		return fmt.Errorf("--queue: %d must lie between 0 (unbounded) and %d", o.Loop.Queue, simulate.MaxQueue)
	}
	if o.Loop.Workers > 0 && fl.Changed("capacity") && o.Loop.Trigger != nil && !o.Herd.Asked() {
		return errors.New("--workers and --capacity both size the dependency: give one")
	}
	return nil
}

// policyOptionFlags are the flags that set recommend.PolicyOptions.
var policyOptionFlags = []optionFlag[recommend.PolicyOptions]{
	{"deadline", func(d *recommend.PolicyOptions, s recommend.PolicyOptions) { d.Deadline = s.Deadline }},
	{"attempts", func(d *recommend.PolicyOptions, s recommend.PolicyOptions) { d.Attempts = s.Attempts }},
	{"backoff-base", func(d *recommend.PolicyOptions, s recommend.PolicyOptions) { d.BackoffBase = s.BackoffBase }},
	{"backoff-cap", func(d *recommend.PolicyOptions, s recommend.PolicyOptions) { d.BackoffCap = s.BackoffCap }},
	{"retry-on", func(d *recommend.PolicyOptions, s recommend.PolicyOptions) { d.RetryOn = s.RetryOn }},
	{"layers", func(d *recommend.PolicyOptions, s recommend.PolicyOptions) { d.Layers = s.Layers }},
}

// checkPolicy checks o with recommend's own rule (PolicyOptions.Validate).
func checkPolicy(fl *pflag.FlagSet, o recommend.PolicyOptions) error {
	return checkOptions(fl, o, recommend.PolicyOptions{Attempts: 1, Layers: 1}, policyOptionFlags, recommend.PolicyOptions.Validate)
}

// parseFailRate reads a percentage like ParsePercent, and also 100 %: a
// dependency whose every attempt fails fast.
func parseFailRate(s string) (float64, error) {
	if t := strings.TrimSpace(s); t == "100%" || t == "1" {
		return 1, nil
	}
	return recommend.ParsePercent(s)
}

// parseShare reads a share of one: a percentage ("5%") or a fraction
// ("0.05", "1/20"), from 0 up to but not including 1.
func parseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	var v float64
	var err error
	switch {
	case strings.HasSuffix(t, "%"):
		v, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
		v /= 100
	case strings.Contains(t, "/"):
		num, den, _ := strings.Cut(t, "/")
		var n, d float64
		if n, err = strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil {
			d, err = strconv.ParseFloat(strings.TrimSpace(den), 64)
			v = n / d
		}
	default:
		v, err = strconv.ParseFloat(t, 64)
	}
	if err != nil || !(v >= 0 && v < 1) {
		return 0, fmt.Errorf("%q is not a share from 0 up to 1: write 5%%, 0.05 or 1/20", s)
	}
	return v, nil
}

// parseQuantileName reads a quantile written as a percentile, "p95" or
// "p99.9".
func parseQuantileName(s string) (float64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	num, ok := strings.CutPrefix(t, "p")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(v > 0 && v < 100) {
		return 0, fmt.Errorf("%q is not a percentile such as p95 or p99.9", s)
	}
	return v / 100, nil
}

func jitterNames() string { return strings.Join(jitterList(), ", ") }

// jitterList names recommend.Jitters, the default first.
func jitterList() []string {
	names := make([]string, len(recommend.Jitters))
	for i, j := range recommend.Jitters {
		names[i] = string(j)
	}
	return names
}
