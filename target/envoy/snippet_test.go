package envoy_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// TestSnippets: envoy's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, envoy.Target, targettest.Checks{
		Validate:   targettest.Each(validateEnvoy),
		Behaviours: readEnvoy,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 2, HangWait: time.Second, FailSuccess: 0.99,
			Why: "the route timeout cuts the second attempt at 1s; Envoy sends it however little time is left"},
		Refuses: []targettest.Mistake{
			{Name: "envoy max_interval < base_interval", From: "max_interval: 0.250s", To: "max_interval: 0.010s"},
			{Name: "envoy Go duration", From: "timeout: 0.800s", To: "timeout: 800ms"},
			{Name: "envoy per_try_timeout as long as the route's", From: "per_try_timeout: 0.800s", To: "per_try_timeout: 2.500s"},
			{Name: "envoy unknown retry_on", From: `retry_on: "connect-failure,refused-stream,reset-before-request"`, To: `retry_on: "connect-failure,timeout"`},
			{Name: "envoy zero connect timeout", From: "connect_timeout: 0.006s", To: "connect_timeout: 0s"},
			{Name: "envoy unknown field", From: "num_retries: 2", To: "retries: 2"},
		},
	})
}

// --- Envoy: go-control-plane's types and their protoc-gen-validate rules.

func validateEnvoy(body []byte) error {
	docs := targettest.YAMLDocs(body)
	if len(docs) != 2 {
		return fmt.Errorf("want a RouteConfiguration and a Cluster, got %d documents", len(docs))
	}
	rj, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		return fmt.Errorf("route YAML: %w", err)
	}
	var rc routev3.RouteConfiguration
	if err := protojson.Unmarshal(rj, &rc); err != nil {
		return fmt.Errorf("RouteConfiguration: %w", err)
	}
	if err := rc.ValidateAll(); err != nil {
		return fmt.Errorf("RouteConfiguration: %w", err)
	}
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if re := r.GetMatch().GetSafeRegex().GetRegex(); re != "" {
				if _, err := regexp.Compile(re); err != nil { // Envoy's regexes are RE2, as Go's
					return fmt.Errorf("route %q: regex: %w", r.GetName(), err)
				}
			}
			ra := r.GetRoute()
			if ra.GetTimeout().AsDuration() <= 0 {
				return fmt.Errorf("route %q: timeout %v: 0 would disable it", r.GetName(), ra.GetTimeout())
			}
			rp := ra.GetRetryPolicy()
			if rp == nil {
				continue
			}
			bo := rp.GetRetryBackOff()
			// Envoy refuses max_interval < base_interval when it loads the route.
			if bo.GetMaxInterval() != nil && bo.GetMaxInterval().AsDuration() < bo.GetBaseInterval().AsDuration() {
				return fmt.Errorf("route %q: max_interval %v < base_interval %v", r.GetName(), bo.GetMaxInterval().AsDuration(), bo.GetBaseInterval().AsDuration())
			}
			if rp.GetNumRetries().GetValue() < 1 {
				return fmt.Errorf("route %q: a retry_policy without retries", r.GetName())
			}
			// Envoy ignores a per_try_timeout that is not below a non-zero
			// route timeout (router's FilterUtility::finalTimeout).
			if pt := rp.GetPerTryTimeout(); pt != nil && (pt.AsDuration() <= 0 || pt.AsDuration() >= ra.GetTimeout().AsDuration()) {
				return fmt.Errorf("route %q: per_try_timeout %v outside (0, timeout %v)", r.GetName(), pt.AsDuration(), ra.GetTimeout().AsDuration())
			}
			for _, c := range strings.Split(rp.GetRetryOn(), ",") {
				if !targettest.RetryConditions[c] {
					return fmt.Errorf("route %q: retry_on %q", r.GetName(), c)
				}
			}
			if hp := ra.GetHedgePolicy(); hp != nil && (!hp.GetHedgeOnPerTryTimeout() || rp.GetPerTryTimeout() == nil) {
				return fmt.Errorf("route %q: a hedge_policy without hedge_on_per_try_timeout and a per_try_timeout does nothing", r.GetName())
			}
		}
	}
	cj, err := yaml.YAMLToJSON(docs[1])
	if err != nil {
		return fmt.Errorf("cluster YAML: %w", err)
	}
	var c clusterv3.Cluster
	if err := protojson.Unmarshal(cj, &c); err != nil {
		return fmt.Errorf("Cluster: %w", err)
	}
	if err := c.ValidateAll(); err != nil {
		return fmt.Errorf("Cluster: %w", err)
	}
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		if p := th.GetRetryBudget().GetBudgetPercent(); p != nil && (p.GetValue() <= 0 || p.GetValue() > 100) {
			return fmt.Errorf("retry_budget.budget_percent %v outside (0, 100]", p.GetValue())
		}
	}
	return nil
}

func readEnvoy(body []byte) ([]targettest.Behaviour, error) {
	docs := targettest.YAMLDocs(body)
	rj, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		return nil, err
	}
	var rc routev3.RouteConfiguration
	if err := protojson.Unmarshal(rj, &rc); err != nil {
		return nil, err
	}
	cj, err := yaml.YAMLToJSON(docs[1])
	if err != nil {
		return nil, err
	}
	var c clusterv3.Cluster
	if err := protojson.Unmarshal(cj, &c); err != nil {
		return nil, err
	}
	var out []targettest.Behaviour
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			// The route timeout resets every attempt when it fires; 0 would
			// disable it (and Envoy's default is 15s, not "none").
			b := targettest.Behaviour{Name: r.GetName(), Bound: ra.GetTimeout().AsDuration(), Attempts: 1, Connect: c.GetConnectTimeout().AsDuration()}
			b.Worst = b.Bound
			b.CatchAll = r.GetMatch().GetPrefix() == "/" && r.GetMatch().GetHeaders() == nil
			if rp := ra.GetRetryPolicy(); rp != nil {
				b.Attempts = 1 + int(rp.GetNumRetries().GetValue())
				b.PerTry = rp.GetPerTryTimeout().AsDuration()
				b.Base, b.Cap = rp.GetRetryBackOff().GetBaseInterval().AsDuration(), rp.GetRetryBackOff().GetMaxInterval().AsDuration()
				for _, cond := range strings.Split(rp.GetRetryOn(), ",") {
					switch {
					case targettest.NeverSentConds[cond]:
						b.RetryNeverSent = true
					case cond == "reset":
						b.RetrySent, b.Timeouts, b.RetryNeverSent = true, true, true
					default:
						b.RetrySent = true
					}
				}
				for _, s := range rp.GetRetriableStatusCodes() {
					b.Statuses = append(b.Statuses, strconv.Itoa(int(s)))
				}
			}
			if hp := ra.GetHedgePolicy(); hp != nil && hp.GetHedgeOnPerTryTimeout() {
				b.Hedge, b.HedgeAttempts, b.RetrySent = b.PerTry, b.Attempts, true
				b.PerTry = 0 // a per-try timeout sends a hedge rather than ending the attempt
			}
			if b.PerTry == 0 && b.Hedge == 0 {
				b.PerTry = b.Bound
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// TestHeaderExplains: the header says which data and rule made the timeout.
func TestHeaderExplains(t *testing.T) {
	r := targettest.LoadReport(t, "mixture.json")
	body, err := envoy.Target.Render(r, target.Options{})
	require.NoError(t, err)
	assert.Contains(t, string(body), "#   timeout 0.800s: 800ms = p99.9 of 200,000 calls (792ms), rounded up")
	assert.Contains(t, string(body), "max_requests 25 = bulkhead (Poisson p99.9 of 13 calls in flight at the peak rate)")
}
