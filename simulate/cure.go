package simulate

import (
	"context"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// Cure kinds, in the order FindCure tries them: the order of their cost
// to whoever owns the call (docs/metastability.md#the-cure). A budget
// keeps every retry of a healthy dependency and sheds only the excess; a
// smaller attempt count drops retries always; a longer backoff makes
// every retry later; dropping expired work is a change to the server; a
// lower rate is load the callers must shed or send elsewhere.
const (
	CureRetryBudget = "retry-budget"
	CureAttempts    = "attempts"
	CureBackoff     = "backoff"
	CureDropExpired = "drop-expired"
	CureRate        = "rate"
)

// The changes FindCure tries, largest first within each kind: the first
// one that recovers is the cheapest of its kind (the largest budget, the
// most attempts, the shortest backoff, the highest rate).
var (
	CureBudgets         = []float64{0.5, 0.2, 0.1, 0.05, 0.02, 0.01}
	CureBackoffFactors  = []float64{2, 4, 8, 16}
	CureRateFactors     = []float64{0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5}
	maxCureBackoffWaits = time.Minute // a longer backoff is no cure a caller waits for
)

// Cure is the cheapest change of those tried that makes the dependency
// recover from the trigger, and the run with it.
type Cure struct {
	Kind        string
	RetryBudget float64           // CureRetryBudget: the share of requests that may be retries
	Attempts    int               // CureAttempts: the most attempts
	Backoff     recommend.Backoff // CureBackoff: the longer backoff
	Factor      float64           // CureBackoff: x the backoff; CureRate: x the rate
	Rate        float64           // CureRate: the rate that recovers
	Policy      recommend.Policy  // the policy with the change
	Options     LoopOptions       // the loop with the change
	Result      LoopResult
	// Tried is how many runs it took, the cure's included.
	Tried int
}

// FindCure looks, for the policy p that does not recover from o's
// trigger, for the cheapest change that does: the largest retry budget
// below p's (when p retries), fewer attempts, a longer backoff (at most
// x16, and a cap of at most a minute), a server that drops expired work,
// and the largest of a few lower rates; each run with o's seed, its
// duration stretched to fit the changed policy. It returns nil when none
// of them recovers.
func FindCure(ctx context.Context, h *histogram.Latency, p recommend.Policy, o LoopOptions) (*Cure, error) {
	o = o.withDefaults()
	tried := 0
	run := func(c Cure) (*Cure, error) {
		tried++
		c.Options.Duration = max(c.Options.Duration, c.Options.TriggerAt+c.Options.Trigger.Duration+c.Options.RecoverWithin+lifetime(c.Policy)+c.Options.Window)
		res, err := RunLoop(ctx, h, c.Policy, c.Options)
		if err != nil {
			return nil, err
		}
		if !res.Recovered {
			return nil, nil
		}
		c.Result, c.Tried = res, tried
		return &c, nil
	}
	var candidates []Cure
	if p.Attempts > 1 {
		for _, b := range CureBudgets {
			if p.RetryBudget > 0 && b >= p.RetryBudget {
				continue
			}
			q := p
			q.RetryBudget = b
			candidates = append(candidates, Cure{Kind: CureRetryBudget, RetryBudget: b, Policy: q, Options: o})
		}
		for n := p.Attempts - 1; n >= 1; n-- {
			q := p
			q.Attempts = n
			candidates = append(candidates, Cure{Kind: CureAttempts, Attempts: n, Policy: q, Options: o})
		}
		for _, f := range CureBackoffFactors {
			q := p
			q.Backoff.Base = time.Duration(float64(p.Backoff.Base) * f)
			q.Backoff.Cap = time.Duration(float64(p.Backoff.Cap) * f)
			if q.Backoff.Cap > maxCureBackoffWaits {
				break
			}
			candidates = append(candidates, Cure{Kind: CureBackoff, Backoff: q.Backoff, Factor: f, Policy: q, Options: o})
		}
	}
	if !o.DropExpired {
		d := o
		d.DropExpired = true
		candidates = append(candidates, Cure{Kind: CureDropExpired, Policy: p, Options: d})
	}
	for _, f := range CureRateFactors {
		r := o
		r.Rate = o.Rate * f
		candidates = append(candidates, Cure{Kind: CureRate, Factor: f, Rate: r.Rate, Policy: p, Options: r})
	}
	for _, c := range candidates {
		cure, err := run(c)
		if err != nil || cure != nil {
			return cure, err
		}
	}
	return nil, nil
}
