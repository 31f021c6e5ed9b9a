// Package envoy is the config target of Envoy: a RouteConfiguration and a Cluster per report, and the
// reading of Envoy configs (bootstrap, RDS and CDS resources) for check.
package envoy

import (
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes two YAML documents: a RouteConfiguration (one route per
// group: timeout, retry_policy, hedge_policy) and a Cluster
// (connect_timeout, circuit breakers, retry budget). YAML rather than JSON
// so that the numbers can carry their reasons; Envoy reads both.
var Target = target.Target{
	Name:     "envoy",
	File:     "envoy.yaml",
	Summary:  "Envoy RouteConfiguration (timeout, retry_policy, hedge_policy) and Cluster (connect_timeout, circuit_breakers, retry_budget)",
	Language: "yaml",
	Comment:  "#",
	Write:    renderEnvoy,
	Reader:   ReadConfig,
	Detect:   Detect,
	Duration: target.ProtoDur,
	UpstreamKeys: func(ob target.Object) []string {
		if ob.Kind == "cluster" {
			return []string{ob.Name}
		}
		return nil
	},
}

func renderEnvoy(p *target.Plan, d *target.Doc) error {
	d.Note("Envoy route and cluster for %q, written by tunetimeout from measured latency.", p.Service)
	d.Note("Durations are proto JSON durations rounded up to the millisecond. A route's timeout bounds the whole call: every attempt and the backoff between them; Envoy sends a retry however little time is left, and the route timeout cuts it.")
	// The router filter's respect_expected_rq_timeout (router.proto): the
	// route's timeout is then taken from the request's
	// x-envoy-expected-rq-timeout-ms, in place of the configured one
	// (router.cc, FilterUtility::finalTimeout); the HTTP connection manager
	// removes the header from requests it does not count as internal.
	d.Note("The time left is passed down by %s: Envoy sets it on every request it sends (a route's per_try_timeout, or its timeout), and so do the Go and httpx snippets. This file holds routes and a cluster, not the HTTP connection manager: set respect_expected_rq_timeout: true in its router filter (envoy.filters.http.router, typed_config envoy.extensions.filters.http.router.v3.Router) in this Envoy and every Envoy below it, so that a request from an internal caller gets the time its caller has left in place of the route's timeout (a larger value too: the caller waits that long).", target.DeadlineHeader)
	p.NoteUnroutable(d, "an Envoy route")
	names := target.NewUnique("-")
	d.Printf("# RouteConfiguration: serve it by RDS, or paste it as route_config of the HTTP connection manager.\n")
	d.Printf("name: %s\n", target.YQ(p.Service))
	d.Printf("virtual_hosts:\n- name: %s\n  domains: [\"*\"]\n  routes:\n", target.YQ(p.Service))
	for _, rt := range p.PathRoutes() {
		name := names.Name(target.RouteName(rt.Group))
		d.Note("route %q (%s):", name, rt.Describe())
		d.Note("  timeout %s: %s", target.ProtoDur(rt.Timeout), rt.TimeoutWhy)
		d.Printf("  - name: %s\n    match:\n", target.YQ(name))
		switch {
		case rt.Match.Regex != "":
			d.Printf("      safe_regex:\n        regex: %s\n", target.YQ(rt.Match.Regex))
		case rt.Match.Exact != "":
			d.Printf("      path: %s\n", target.YQ(rt.Match.Exact))
		default:
			d.Printf("      prefix: \"/\"\n")
		}
		if rt.Match.Method != "" {
			d.Printf("      headers:\n      - name: \":method\"\n        string_match:\n          exact: %s\n", rt.Match.Method)
		}
		d.Printf("    route:\n      cluster: %s\n      timeout: %s\n", target.YQ(p.Service), target.ProtoDur(rt.Timeout))
		envoyRetries(d, rt)
	}

	d.Printf("---\n# Cluster: serve it by CDS, or add it to static_resources.clusters.\n")
	d.Printf("name: %s\ntype: STRICT_DNS\n", target.YQ(p.Service))
	d.Note("cluster %q:", p.Service)
	connect, why := p.ClusterConnect()
	d.Note("  connect_timeout %s: %s", target.ProtoDur(connect), why)
	d.Printf("connect_timeout: %s\n", target.ProtoDur(connect))
	if p.Bulkhead != nil || p.Budget != nil {
		d.Printf("circuit_breakers:\n  thresholds:\n  - priority: DEFAULT\n")
	}
	if b := p.Bulkhead; b != nil {
		d.Note("  max_requests %s", p.BulkheadWhy)
		d.Note("  max_connections and max_pending_requests: the same bulkhead (HTTP/1.1 holds one connection per request; a cold start queues them all, and a queued request waits within the route timeout)")
		d.Printf("    max_connections: %d\n    max_pending_requests: %d\n    max_requests: %d\n", *b, *b, *b)
	} else {
		d.Note("  no bulkhead (Envoy's default thresholds of 1024 apply): the report has no call rate (analyze %s, or timestamps)", usage.Rate)
	}
	if bud := p.Budget; bud != nil {
		pct := math.Min(100, math.Round(*bud*100*1000)/1000)
		d.Note("  retry_budget budget_percent %s: %s; min_retry_concurrency 3 (Envoy's default); Envoy's budget caps the retries outstanding at once to that share of the active requests, and it replaces max_retries", target.Ratio(pct), p.BudgetWhy)
		d.Printf("    retry_budget:\n      budget_percent:\n        value: %s\n      min_retry_concurrency: 3\n", target.Ratio(pct))
	} else if b := p.Bulkhead; b != nil && target.MaxAttempts(p) > 1 {
		mr := max(1, int(math.Ceil(float64(*b)*0.1)))
		d.Note("  max_retries %d = 10 %% of the bulkhead retried at once (no retry budget in the report)", mr)
		d.Printf("    max_retries: %d\n", mr)
	}
	envoySwitch(d, p)
	d.Printf("load_assignment:\n  cluster_name: %s\n  endpoints:\n  - lb_endpoints:\n    - endpoint:\n        address:\n          socket_address:\n            address: %s\n            port_value: 80  # the service's port\n", target.YQ(p.Service), target.YQ(target.DNSSubdomain(p.Service)))
	return nil
}

// envoyRetries writes a route's retry_policy and hedge_policy.
func envoyRetries(d *target.Doc, rt target.Route) {
	hedged := rt.Hedge != nil
	if rt.Attempts <= 1 && !hedged {
		d.Note("  no retry_policy, %s", rt.AttemptsWhy)
		return
	}
	retries := rt.Retries()
	perTry, perTryWhy := rt.PerTry, rt.PerTryWhy
	if hedged {
		retries = max(retries, rt.Hedge.Attempts-1)
		perTry = target.CeilMs(rt.Hedge.DelaySeconds)
		perTryWhy = "the hedge delay"
	}
	conds, codes, skipped := RetryOn(rt)
	if hedged && rt.Attempts <= 1 {
		d.Note("  num_retries %d: the hedges beyond the first request (each hedge counts as a retry); per_try_timeout %s: %s", retries, target.ProtoDur(perTry), perTryWhy)
	} else {
		d.Note("  num_retries %d = %s, less the first; per_try_timeout %s: %s", retries, rt.AttemptsWhy, target.ProtoDur(perTry), perTryWhy)
	}
	if !rt.Idempotent && rt.NeverSentOnly() {
		d.Note("  retry_on %s: %s, so only failures that prove the request never reached the upstream are retried; reset-before-request needs Envoy 1.31 or later", conds, rt.IdempotentWhy)
	} else {
		d.Note("  retry_on %s from %s (a per-try timeout is retried under reset)", conds, strings.Join(rt.RetryOn, ", "))
	}
	if len(skipped) > 0 {
		d.Note("  not expressible in Envoy's retry_on, left out: %s", strings.Join(skipped, ", "))
	}
	d.Note("  retry_back_off %s to %s: %s; Envoy's backoff is full jitter, uniform up to min(base x 2^n, max)", target.ProtoDur(rt.BackoffBase), target.ProtoDur(rt.BackoffCap), rt.BackoffWhy)
	d.Note("  %s", rt.HangText(true))
	d.Printf("      retry_policy:\n        retry_on: %s\n", target.YQ(conds))
	if len(codes) > 0 {
		d.Printf("        retriable_status_codes: [%s]\n", strings.Join(codes, ", "))
	}
	d.Printf("        num_retries: %d\n", retries)
	// Envoy ignores a per_try_timeout that is not below the route timeout
	// (router's FilterUtility::finalTimeout sets it to 0).
	if perTry < rt.Timeout {
		d.Printf("        per_try_timeout: %s\n", target.ProtoDur(perTry))
	} else {
		d.Note("  per_try_timeout not written: at %s it is not below the route timeout, and Envoy would ignore it", target.ProtoDur(perTry))
	}
	base, capd := rt.BackoffBase, rt.BackoffCap
	if base <= 0 {
		base, capd = 25*time.Millisecond, 250*time.Millisecond // Envoy's defaults, for a hedge without retries
	}
	d.Printf("        retry_back_off:\n          base_interval: %s\n          max_interval: %s\n", target.ProtoDur(base), target.ProtoDur(capd))
	if ra := retryAfterStatuses(codes); len(ra) > 0 {
		d.Note("  rate_limited_retry_back_off: a %s with a Retry-After in seconds is retried no sooner (Envoy waits 1 to 1.5 x it, RFC 9110 section 10.2.3); when that does not fit, the route timeout of %s ends the call (a 504 at the deadline, not the %s at once); a Retry-After above max_interval %s, or an HTTP-date, is not read and the backoff above applies",
			strings.Join(ra, " or "), target.ProtoDur(rt.Timeout), strings.Join(ra, " or "), target.ProtoDur(RetryAfterWait))
		d.Printf("        rate_limited_retry_back_off:\n          reset_headers:\n          - name: retry-after\n            format: SECONDS\n          max_interval: %s\n", target.ProtoDur(RetryAfterWait))
	}
	if hedged {
		h := rt.Hedge
		d.Note("  hedge_policy hedge_on_per_try_timeout: when no answer has come %s (%s) after a request, Envoy sends another (after a backoff wait) without cancelling it, up to %d in all; the first good answer wins. With independent attempts p99 %s, p99.9 %s, for %s more requests. The per-try timeout no longer ends an attempt: the route timeout does",
			target.ProtoDur(perTry), target.QuantileName(h.Quantile), h.Attempts, target.Secs(h.P99Seconds), target.Secs(h.P999Seconds), target.Percent(h.ExtraLoadFraction))
		d.Printf("      hedge_policy:\n        hedge_on_per_try_timeout: true\n")
	}
}

// RetryOn maps the route's retry conditions to Envoy's retry_on: for
// a call that is not idempotent retrying only never-sent failures,
// target.EnvoyNeverSent; else connect-failure and refused-stream as they are, a
// timeout to "reset" (a per-try timeout is a local reset), status codes to
// retriable-status-codes.
func RetryOn(rt target.Route) (conds string, codes, skipped []string) {
	if rt.NeverSentOnly() {
		return target.EnvoyNeverSent, nil, nil
	}
	var cs []string
	add := func(c string) {
		for _, x := range cs {
			if x == c {
				return
			}
		}
		cs = append(cs, c)
	}
	for _, o := range rt.RetryOn {
		o = strings.ToLower(strings.TrimSpace(o))
		switch {
		case o == "connect-failure" || o == "refused-stream" || o == "reset" || o == "5xx" || o == "gateway-error":
			add(o)
		case o == "timeout":
			add("reset")
		case target.IsStatus(o):
			add("retriable-status-codes")
			codes = append(codes, o)
		default:
			skipped = append(skipped, o)
		}
	}
	if len(cs) == 0 {
		cs = []string{"connect-failure"}
	}
	return strings.Join(cs, ","), codes, skipped
}

// RetryAfterWait is the max_interval of rate_limited_retry_back_off:
// the longest Retry-After Envoy waits for. A longer one is discarded and the
// exponential backoff applies (RetryPolicy.RateLimitedRetryBackOff,
// route_components.proto), so it is far above any route timeout, which ends
// a call whose Retry-After does not fit first.
const RetryAfterWait = 24 * time.Hour

// retryAfterStatuses returns the retried statuses a server sends with a
// Retry-After asking the client to wait (RFC 9110 section 10.2.3: 503;
// RFC 6585 section 4: 429).
func retryAfterStatuses(codes []string) []string {
	var out []string
	for _, c := range codes {
		if c == "429" || c == "503" {
			out = append(out, c)
		}
	}
	return out
}

// envoySwitch says how to turn the cluster's retries off without a deploy:
// every circuit breaker setting is runtime configurable as
// circuit_breakers.<cluster_name>.<priority>.<setting>, priority default or
// high, and a runtime value overrides the config
// (configuration/upstream/cluster_manager/cluster_circuit_breakers; the
// priority's name is lowercase in source/common/upstream/cluster_manager_impl.cc).
// A retry budget replaces max_retries, so with one its two settings are
// set to 0 instead; a retry that overflows is not sent
// (upstream_rq_retry_overflow). /runtime_modify writes the admin layer.
func envoySwitch(d *target.Doc, p *target.Plan) {
	prefix := "circuit_breakers." + url.QueryEscape(p.Service) + ".default."
	q := prefix + "max_retries=0"
	if p.Budget != nil {
		q = prefix + "retry_budget.budget_percent=0&" + prefix + "retry_budget.min_retry_concurrency=0"
	}
	d.Note("Retries off during an incident, without a deploy: override the cluster's retry circuit breaker at runtime, curl -X POST 'http://127.0.0.1:9901/runtime_modify?%s' (your admin address; the bootstrap's layered_runtime needs an admin_layer): every retry then overflows (upstream_rq_retry_overflow) and a call returns its first attempt's answer, on every route of the cluster. The same keys with an empty value (key=) remove the override.", q)
}
