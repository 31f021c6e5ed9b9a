package target

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// envoyTarget writes two YAML documents: a RouteConfiguration (one route per
// group: timeout, retry_policy, hedge_policy) and a Cluster
// (connect_timeout, circuit breakers, retry budget). YAML rather than JSON
// so that the numbers can carry their reasons; Envoy reads both.
var envoyTarget = Target{
	Name:    "envoy",
	File:    "envoy.yaml",
	Summary: "Envoy RouteConfiguration (timeout, retry_policy, hedge_policy) and Cluster (connect_timeout, circuit_breakers, retry_budget)",
	Comment: "#",
	render:  renderEnvoy,
	read:    readEnvoyConfig,
	detect:  detectEnvoyConfig,
}

// envoyNeverSent is what Envoy retries for a call that is not idempotent:
// failures after which the request never reached the upstream
// (router/retry_state_impl.cc: connect-failure is a pool or TCP failure,
// refused-stream an HTTP/2 REFUSED_STREAM, reset-before-request a reset
// before the request's headers were sent upstream; Envoy 1.31 or later).
const envoyNeverSent = "connect-failure,refused-stream,reset-before-request"

func renderEnvoy(p *plan, d *doc) error {
	d.note("Envoy route and cluster for %q, written by tunetimeout from measured latency.", p.service)
	d.note("Durations are proto JSON durations rounded up to the millisecond. A route's timeout bounds the whole call: every attempt and the backoff between them; Envoy sends a retry however little time is left, and the route timeout cuts it.")
	// The router filter's respect_expected_rq_timeout (router.proto): the
	// route's timeout is then taken from the request's
	// x-envoy-expected-rq-timeout-ms, in place of the configured one
	// (router.cc, FilterUtility::finalTimeout); the HTTP connection manager
	// removes the header from requests it does not count as internal.
	d.note("The time left is passed down by %s: Envoy sets it on every request it sends (a route's per_try_timeout, or its timeout), and so do the Go and httpx snippets. This file holds routes and a cluster, not the HTTP connection manager: set respect_expected_rq_timeout: true in its router filter (envoy.filters.http.router, typed_config envoy.extensions.filters.http.router.v3.Router) in this Envoy and every Envoy below it, so that a request from an internal caller gets the time its caller has left in place of the route's timeout (a larger value too: the caller waits that long).", deadlineHeader)
	p.noteUnroutable(d, "an Envoy route")
	names := newUnique("-")
	d.p("# RouteConfiguration: serve it by RDS, or paste it as route_config of the HTTP connection manager.\n")
	d.p("name: %s\n", yq(p.service))
	d.p("virtual_hosts:\n- name: %s\n  domains: [\"*\"]\n  routes:\n", yq(p.service))
	for _, rt := range p.pathRoutes() {
		name := names.name(routeName(rt.group))
		d.note("route %q (%s):", name, rt.describe())
		d.note("  timeout %s: %s", protoDur(rt.timeout), rt.timeoutWhy)
		d.p("  - name: %s\n    match:\n", yq(name))
		switch {
		case rt.match.regex != "":
			d.p("      safe_regex:\n        regex: %s\n", yq(rt.match.regex))
		case rt.match.exact != "":
			d.p("      path: %s\n", yq(rt.match.exact))
		default:
			d.p("      prefix: \"/\"\n")
		}
		if rt.match.method != "" {
			d.p("      headers:\n      - name: \":method\"\n        string_match:\n          exact: %s\n", rt.match.method)
		}
		d.p("    route:\n      cluster: %s\n      timeout: %s\n", yq(p.service), protoDur(rt.timeout))
		envoyRetries(d, rt)
	}

	d.p("---\n# Cluster: serve it by CDS, or add it to static_resources.clusters.\n")
	d.p("name: %s\ntype: STRICT_DNS\n", yq(p.service))
	d.note("cluster %q:", p.service)
	connect, why := p.clusterConnect()
	d.note("  connect_timeout %s: %s", protoDur(connect), why)
	d.p("connect_timeout: %s\n", protoDur(connect))
	if p.bulkhead != nil || p.budget != nil {
		d.p("circuit_breakers:\n  thresholds:\n  - priority: DEFAULT\n")
	}
	if b := p.bulkhead; b != nil {
		d.note("  max_requests %s", p.bulkheadWhy)
		d.note("  max_connections and max_pending_requests: the same bulkhead (HTTP/1.1 holds one connection per request; a cold start queues them all, and a queued request waits within the route timeout)")
		d.p("    max_connections: %d\n    max_pending_requests: %d\n    max_requests: %d\n", *b, *b, *b)
	} else {
		d.note("  no bulkhead (Envoy's default thresholds of 1024 apply): the report has no call rate (analyze --rate, or timestamps)")
	}
	if bud := p.budget; bud != nil {
		pct := math.Min(100, math.Round(*bud*100*1000)/1000)
		d.note("  retry_budget budget_percent %s: %s; min_retry_concurrency 3 (Envoy's default); Envoy's budget caps the retries outstanding at once to that share of the active requests, and it replaces max_retries", ratio(pct), p.budgetWhy)
		d.p("    retry_budget:\n      budget_percent:\n        value: %s\n      min_retry_concurrency: 3\n", ratio(pct))
	} else if b := p.bulkhead; b != nil && maxAttempts(p) > 1 {
		mr := max(1, int(math.Ceil(float64(*b)*0.1)))
		d.note("  max_retries %d = 10 %% of the bulkhead retried at once (no retry budget in the report)", mr)
		d.p("    max_retries: %d\n", mr)
	}
	envoySwitch(d, p)
	d.p("load_assignment:\n  cluster_name: %s\n  endpoints:\n  - lb_endpoints:\n    - endpoint:\n        address:\n          socket_address:\n            address: %s\n            port_value: 80  # the service's port\n", yq(p.service), yq(dnsSubdomain(p.service)))
	return nil
}

// envoyRetries writes a route's retry_policy and hedge_policy.
func envoyRetries(d *doc, rt route) {
	hedged := rt.hedge != nil
	if rt.attempts <= 1 && !hedged {
		d.note("  no retry_policy, %s", rt.attemptsWhy)
		return
	}
	retries := rt.retries()
	perTry, perTryWhy := rt.perTry, rt.perTryWhy
	if hedged {
		retries = max(retries, rt.hedge.Attempts-1)
		perTry = ceilMs(rt.hedge.DelaySeconds)
		perTryWhy = "the hedge delay"
	}
	conds, codes, skipped := envoyRetryOn(rt)
	if hedged && rt.attempts <= 1 {
		d.note("  num_retries %d: the hedges beyond the first request (each hedge counts as a retry); per_try_timeout %s: %s", retries, protoDur(perTry), perTryWhy)
	} else {
		d.note("  num_retries %d = %s, less the first; per_try_timeout %s: %s", retries, rt.attemptsWhy, protoDur(perTry), perTryWhy)
	}
	if !rt.idempotent && rt.neverSentOnly() {
		d.note("  retry_on %s: %s, so only failures that prove the request never reached the upstream are retried; reset-before-request needs Envoy 1.31 or later", conds, rt.idempotentWhy)
	} else {
		d.note("  retry_on %s from %s (a per-try timeout is retried under reset)", conds, strings.Join(rt.retryOn, ", "))
	}
	if len(skipped) > 0 {
		d.note("  not expressible in Envoy's retry_on, left out: %s", strings.Join(skipped, ", "))
	}
	d.note("  retry_back_off %s to %s: %s; Envoy's backoff is full jitter, uniform up to min(base x 2^n, max)", protoDur(rt.backoffBase), protoDur(rt.backoffCap), rt.backoffWhy)
	d.note("  %s", rt.hangText(true))
	d.p("      retry_policy:\n        retry_on: %s\n", yq(conds))
	if len(codes) > 0 {
		d.p("        retriable_status_codes: [%s]\n", strings.Join(codes, ", "))
	}
	d.p("        num_retries: %d\n", retries)
	// Envoy ignores a per_try_timeout that is not below the route timeout
	// (router's FilterUtility::finalTimeout sets it to 0).
	if perTry < rt.timeout {
		d.p("        per_try_timeout: %s\n", protoDur(perTry))
	} else {
		d.note("  per_try_timeout not written: at %s it is not below the route timeout, and Envoy would ignore it", protoDur(perTry))
	}
	base, capd := rt.backoffBase, rt.backoffCap
	if base <= 0 {
		base, capd = 25*time.Millisecond, 250*time.Millisecond // Envoy's defaults, for a hedge without retries
	}
	d.p("        retry_back_off:\n          base_interval: %s\n          max_interval: %s\n", protoDur(base), protoDur(capd))
	if ra := retryAfterStatuses(codes); len(ra) > 0 {
		d.note("  rate_limited_retry_back_off: a %s with a Retry-After in seconds is retried no sooner (Envoy waits 1 to 1.5 x it, RFC 9110 section 10.2.3); when that does not fit, the route timeout of %s ends the call (a 504 at the deadline, not the %s at once); a Retry-After above max_interval %s, or an HTTP-date, is not read and the backoff above applies",
			strings.Join(ra, " or "), protoDur(rt.timeout), strings.Join(ra, " or "), protoDur(envoyRetryAfterWait))
		d.p("        rate_limited_retry_back_off:\n          reset_headers:\n          - name: retry-after\n            format: SECONDS\n          max_interval: %s\n", protoDur(envoyRetryAfterWait))
	}
	if hedged {
		h := rt.hedge
		d.note("  hedge_policy hedge_on_per_try_timeout: when no answer has come %s (%s) after a request, Envoy sends another (after a backoff wait) without cancelling it, up to %d in all; the first good answer wins. With independent attempts p99 %s, p99.9 %s, for %s more requests. The per-try timeout no longer ends an attempt: the route timeout does",
			protoDur(perTry), quantileName(h.Quantile), h.Attempts, secs(h.P99Seconds), secs(h.P999Seconds), percent(h.ExtraLoadFraction))
		d.p("      hedge_policy:\n        hedge_on_per_try_timeout: true\n")
	}
}

// envoyRetryOn maps the route's retry conditions to Envoy's retry_on: for
// a call that is not idempotent retrying only never-sent failures,
// envoyNeverSent; else connect-failure and refused-stream as they are, a
// timeout to "reset" (a per-try timeout is a local reset), status codes to
// retriable-status-codes.
func envoyRetryOn(rt route) (conds string, codes, skipped []string) {
	if rt.neverSentOnly() {
		return envoyNeverSent, nil, nil
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
	for _, o := range rt.retryOn {
		o = strings.ToLower(strings.TrimSpace(o))
		switch {
		case o == "connect-failure" || o == "refused-stream" || o == "reset" || o == "5xx" || o == "gateway-error":
			add(o)
		case o == "timeout":
			add("reset")
		case isStatus(o):
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

// isStatus reports whether s is an HTTP status code.
func isStatus(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 100 && n <= 599 && len(s) == 3
}

// maxAttempts is the most attempts of any route.
func maxAttempts(p *plan) int {
	m := 1
	for _, rt := range p.routes {
		m = max(m, rt.attempts)
	}
	return m
}

// dnsSubdomain is a DNS-1123 subdomain (a Kubernetes metadata.name, a
// host name): dot-separated labels, at most 253 characters; "backend" when
// s has no letter or digit.
func dnsSubdomain(s string) string {
	var labels []string
	for _, l := range strings.Split(s, ".") {
		if l = dnsLabel(l, 63); l != "" {
			labels = append(labels, l)
		}
	}
	out := strings.Join(labels, ".")
	if len(out) > 253 {
		out = strings.TrimRight(out[:253], "-.")
	}
	if out == "" {
		return DefaultService
	}
	return out
}

// envoyRetryAfterWait is the max_interval of rate_limited_retry_back_off:
// the longest Retry-After Envoy waits for. A longer one is discarded and the
// exponential backoff applies (RetryPolicy.RateLimitedRetryBackOff,
// route_components.proto), so it is far above any route timeout, which ends
// a call whose Retry-After does not fit first.
const envoyRetryAfterWait = 24 * time.Hour

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
func envoySwitch(d *doc, p *plan) {
	prefix := "circuit_breakers." + url.QueryEscape(p.service) + ".default."
	q := prefix + "max_retries=0"
	if p.budget != nil {
		q = prefix + "retry_budget.budget_percent=0&" + prefix + "retry_budget.min_retry_concurrency=0"
	}
	d.note("Retries off during an incident, without a deploy: override the cluster's retry circuit breaker at runtime, curl -X POST 'http://127.0.0.1:9901/runtime_modify?%s' (your admin address; the bootstrap's layered_runtime needs an admin_layer): every retry then overflows (upstream_rq_retry_overflow) and a call returns its first attempt's answer, on every route of the cluster. The same keys with an empty value (key=) remove the override.", q)
}
