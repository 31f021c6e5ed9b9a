package resilience4j_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
	"sigs.k8s.io/yaml"
)

// TestSnippets: resilience4j's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, resilience4j.Target, targettest.Checks{
		Validate:   targettest.Each(validateResilience4j),
		Behaviours: readResilience4j,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 1, HangWait: time.Second, FailSuccess: 0.8,
			Why: "nothing bounds the call: only one attempt that may time out in full fits, so nothing is retried"},
		Refuses: []targettest.Mistake{
			{Name: "resilience4j compound duration", From: "timeoutDuration: 351ms", To: "timeoutDuration: 1s351ms"},
			{Name: "resilience4j randomizedWaitFactor 1", From: "randomizedWaitFactor: 0.5", To: "randomizedWaitFactor: 1"},
		},
	})
}

// --- resilience4j: no Go parser; the structs mirror the Spring Boot
// properties the snippet uses and the checks mirror resilience4j's builders
// (Spring's single-unit durations, randomizedWaitFactor in [0, 1)).

type r4jConfig struct {
	Resilience4j struct {
		Timelimiter struct {
			Instances map[string]struct {
				TimeoutDuration     string `json:"timeoutDuration"`
				CancelRunningFuture bool   `json:"cancelRunningFuture"`
			} `json:"instances"`
		} `json:"timelimiter"`
		Bulkhead *struct {
			Instances map[string]struct {
				MaxConcurrentCalls int    `json:"maxConcurrentCalls"`
				MaxWaitDuration    string `json:"maxWaitDuration"`
			} `json:"instances"`
		} `json:"bulkhead"`
		Retry *struct {
			Instances map[string]struct {
				MaxAttempts                  int      `json:"maxAttempts"`
				WaitDuration                 string   `json:"waitDuration"`
				EnableExponentialBackoff     bool     `json:"enableExponentialBackoff"`
				ExponentialBackoffMultiplier float64  `json:"exponentialBackoffMultiplier"`
				ExponentialMaxWaitDuration   string   `json:"exponentialMaxWaitDuration"`
				EnableRandomizedWait         bool     `json:"enableRandomizedWait"`
				RandomizedWaitFactor         float64  `json:"randomizedWaitFactor"`
				RetryExceptions              []string `json:"retryExceptions"`
			} `json:"instances"`
		} `json:"retry"`
	} `json:"resilience4j"`
}

var (
	springDuration = regexp.MustCompile(`^[0-9]+(ns|us|ms|s|m|h|d)$`)
	javaClass      = regexp.MustCompile(`^([a-z][a-z0-9_]*\.)+[A-Z][A-Za-z0-9_$]*$`)
)

func validateResilience4j(body []byte) error {
	var c r4jConfig
	if err := yaml.UnmarshalStrict(body, &c); err != nil {
		return err
	}
	r := c.Resilience4j
	if len(r.Timelimiter.Instances) == 0 {
		return errors.New("no timelimiter instance")
	}
	dur := func(what, s string) error {
		if !springDuration.MatchString(s) || s[0] == '0' && s != "0ms" {
			return fmt.Errorf("%s %q is not a Spring duration", what, s)
		}
		return nil
	}
	for n, tl := range r.Timelimiter.Instances {
		if err := dur(n+".timeoutDuration", tl.TimeoutDuration); err != nil {
			return err
		}
	}
	if r.Bulkhead != nil {
		for n, b := range r.Bulkhead.Instances {
			if b.MaxConcurrentCalls < 1 {
				return fmt.Errorf("%s.maxConcurrentCalls %d", n, b.MaxConcurrentCalls)
			}
			if err := dur(n+".maxWaitDuration", b.MaxWaitDuration); err != nil {
				return err
			}
		}
	}
	if r.Retry != nil {
		for n, rt := range r.Retry.Instances {
			if rt.MaxAttempts == 1 && rt.WaitDuration == "" && rt.RetryExceptions == nil && !rt.EnableExponentialBackoff && !rt.EnableRandomizedWait {
				continue // one attempt: nothing is retried, nothing else matters
			}
			if rt.MaxAttempts < 1 || rt.ExponentialBackoffMultiplier <= 1 || rt.RandomizedWaitFactor < 0 || rt.RandomizedWaitFactor >= 1 {
				return fmt.Errorf("retry %s: %+v", n, rt)
			}
			if err := dur(n+".waitDuration", rt.WaitDuration); err != nil {
				return err
			}
			if err := dur(n+".exponentialMaxWaitDuration", rt.ExponentialMaxWaitDuration); err != nil {
				return err
			}
			// Without retryExceptions resilience4j retries every exception.
			if len(rt.RetryExceptions) == 0 {
				return fmt.Errorf("retry %s: no retryExceptions: every exception would be retried", n)
			}
			for _, e := range rt.RetryExceptions {
				if !javaClass.MatchString(e) {
					return fmt.Errorf("retry %s: %q is not a Java class name", n, e)
				}
			}
		}
	}
	return nil
}

func readResilience4j(body []byte) ([]targettest.Behaviour, error) {
	var c r4jConfig
	if err := yaml.Unmarshal(body, &c); err != nil {
		return nil, err
	}
	r := c.Resilience4j
	var out []targettest.Behaviour
	for _, n := range target.SortedKeys(r.Timelimiter.Instances) {
		t, err := time.ParseDuration(r.Timelimiter.Instances[n].TimeoutDuration)
		if err != nil {
			return nil, err
		}
		// Retry(TimeLimiter(call)): nothing bounds the whole call; each
		// attempt is targettest.Bounded by the time limit, and the wait before retry i
		// is min(randomized(base x 2^i), max).
		b := targettest.Behaviour{Name: n, PerTry: t, Attempts: 1, StaticAttempts: true}
		b.Worst = t
		if r.Retry != nil {
			if rt, ok := r.Retry.Instances[n]; ok {
				b.Attempts = rt.MaxAttempts
				b.Base, _ = time.ParseDuration(rt.WaitDuration)
				b.Cap, _ = time.ParseDuration(rt.ExponentialMaxWaitDuration)
				b.RetryExceptions = rt.RetryExceptions
				for _, e := range rt.RetryExceptions {
					if !slices.Contains(resilience4j.NeverSent, e) {
						b.RetrySent = true
					}
				}
				b.RetryNeverSent = true
				w := b.Base
				for range b.Attempts - 1 {
					b.Worst += t + min(time.Duration(float64(w)*(1+rt.RandomizedWaitFactor)), b.Cap)
					w = time.Duration(float64(w) * rt.ExponentialBackoffMultiplier)
				}
			}
		}
		out = append(out, b)
	}
	return out, nil
}
