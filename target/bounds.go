package target

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/recommend"
)

// What each target's values mean for a call, in one place: `check` reads a
// config into recommend.Bounds with them and evaluates it with the code
// that fits a call policy (recommend.Bounds.HangWalk), so that analyze,
// check and the snippets hold one model of a call
// (docs/method.md#attempts-inside-a-deadline).
type semantics struct {
	// overall: Object.Timeout bounds the whole call, every attempt and the
	// backoff between them; false: it bounds one attempt (nginx's
	// proxy_read_timeout, HAProxy's timeout server), and nothing bounds
	// the attempts together.
	overall bool
	// timeoutConds are the retry conditions under which an attempt that
	// its per-try timeout ended is retried; everyCond: every condition
	// retries it (Linkerd retries an attempt its retry.linkerd.io/timeout
	// ended whatever the conditions; resilience4j's Retry sees the
	// TimeLimiter's TimeoutException as any other exception).
	timeoutConds []string
	everyCond    bool
	// neverSent are the conditions that prove the request never reached
	// the application: retrying only them repeats nothing.
	neverSent []string
	// with500 are the conditions that retry a 500.
	with500 []string
	// beforeConnect, beforeQueue: the connect timeout and the queue
	// timeout run before an attempt's request is sent, outside the timer
	// of the attempt, and nothing bounds the attempts together
	// (recommend.Bounds.Before).
	beforeConnect, beforeQueue bool
}

var targetSemantics = map[string]semantics{
	// RouteAction.timeout "spans between the point at which the entire
	// downstream request (i.e. end-of-stream) has been processed and when
	// the upstream response has been completely processed", retries
	// included; a per-try timeout ends an attempt with a 504 that 5xx and
	// gateway-error retry, and reset covers "disconnect/reset/read timeout"
	// (envoy/config/route/v3/route_components.proto; the router filter's
	// x-envoy-retry-on docs).
	"envoy": {overall: true, timeoutConds: []string{"5xx", "gateway-error", "reset"},
		neverSent: []string{"connect-failure", "refused-stream", "reset-before-request"}, with500: []string{"5xx", "500"}},
	// Istio's http.timeout and retries become Envoy's route timeout and
	// retry_policy (istio/api networking/v1alpha3/virtual_service.proto).
	"istio": {overall: true, timeoutConds: []string{"5xx", "gateway-error", "reset"},
		neverSent: []string{"connect-failure", "refused-stream", "reset-before-request"}, with500: []string{"5xx", "500"}},
	// gRFC A6: the call's deadline spans every attempt; gRPC has no
	// per-attempt timeout.
	"grpc": {overall: true, neverSent: []string{}},
	// timeouts.request bounds the whole request, retries included;
	// backendRequest each request to the backend (GEP-1742). A timed-out
	// backend request answers 504.
	"gateway-api": {overall: true, timeoutConds: []string{"504"}, neverSent: []string{}, with500: []string{"500"}},
	// timeout.linkerd.io/request bounds the whole request; an attempt that
	// retry.linkerd.io/timeout ends is retried (Linkerd's HTTPRoute
	// annotations reference).
	"linkerd": {overall: true, everyCond: true, neverSent: []string{}, with500: []string{"5xx", "500"}},
	// proxy_read_timeout bounds each try ("between two successive read
	// operations"); proxy_next_upstream timeout passes a timed-out request
	// on (ngx_http_proxy_module).
	// "error" is a failure to connect, to send the request or to read the
	// response header: it may follow a request the server received.
	// proxy_connect_timeout runs before the request is sent, and
	// proxy_next_upstream_timeout "limits the time during which a request
	// can be passed to the next server": ngx_http_upstream_next passes it
	// on only while less than that has passed since the first try began.
	"nginx": {timeoutConds: []string{"timeout"}, neverSent: []string{}, with500: []string{"http_500"}, beforeConnect: true},
	// timeout server bounds each attempt; retry-on response-timeout
	// retries it (HAProxy's configuration manual, retry-on).
	// all-retryable-errors is "conn-failure", "empty-response",
	// "junk-response", "response-timeout", "0rtt-rejected", "500", "502",
	// "503" and "504".
	// timeout server runs from the connection to the response headers,
	// after timeout queue and timeout connect (configuration.txt, timeout
	// server, timeout queue).
	"haproxy": {timeoutConds: []string{"response-timeout", "all-retryable-errors"}, neverSent: []string{"conn-failure", "0rtt-rejected"},
		with500: []string{"500", "all-retryable-errors"}, beforeQueue: true, beforeConnect: true},
	// The TimeLimiter bounds one call; the Retry around it retries its
	// TimeoutException like any other exception it is told to retry.
	"resilience4j": {everyCond: true, neverSent: []string{}},
}

// Bounds reads the object as its target enforces it: what bounds the call
// and each attempt, how many attempts a timeout leaves, and the backoff,
// with the target's defaults where the config sets none. upstream is the
// object it sends to (an Envoy cluster), whose values count where the
// object has none.
func (o Object) Bounds() recommend.Bounds {
	sem := targetSemantics[o.Target]
	var b recommend.Bounds
	secs := func(s *Setting[float64]) time.Duration {
		if s == nil || !(s.Value > 0) || math.IsInf(s.Value, 0) {
			return 0
		}
		return time.Duration(math.Round(s.Value * float64(time.Second)))
	}
	if sem.overall {
		b.Overall = secs(o.Timeout)
		b.PerTry = secs(o.PerTryTimeout)
	} else {
		b.PerTry = secs(o.PerTryTimeout)
		if b.PerTry == 0 {
			b.PerTry = secs(o.Timeout)
		}
	}
	b.Attempts = 1
	if o.Attempts != nil {
		b.Attempts = max(o.Attempts.Value, 1)
	}
	if b.Attempts > 1 && o.RetryOn != nil {
		b.RetriesTimeouts = sem.retriesTimeouts(o.RetryOn.Value)
	} else if b.Attempts > 1 && o.RetryOn == nil {
		b.RetriesTimeouts = true // conditions unknown: count the worst
	}
	base, capv := secs(o.BackoffBase), secs(o.BackoffMax)
	if capv < base {
		capv = base
	}
	b.Backoff = recommend.Backoff{Jitter: recommend.JitterFull, Base: base, Cap: capv}
	if !sem.overall {
		if sem.beforeQueue && secs(o.QueueTimeout) > 0 {
			b.Before = append(b.Before, secs(o.QueueTimeout))
		}
		if sem.beforeConnect && secs(o.ConnectTimeout) > 0 {
			b.Before = append(b.Before, secs(o.ConnectTimeout))
		}
		b.RetryWindow = secs(o.RetryWindow)
	}
	if o.BackoffGrowth >= 1 && capv > 0 {
		b.WaitGrowth, b.WaitAbove = o.BackoffGrowth, o.JitterAbove
	}
	return b
}

// retriesTimeouts reports whether the conditions retry an attempt its
// per-try timeout ended.
func (s semantics) retriesTimeouts(conds []string) bool {
	if s.everyCond {
		return len(conds) > 0
	}
	return slices.ContainsFunc(conds, func(c string) bool {
		return slices.ContainsFunc(s.timeoutConds, func(t string) bool { return strings.EqualFold(c, t) })
	})
}

// RetriesTimeouts reports whether the object retries an attempt that its
// per-try timeout ended.
func (o Object) RetriesTimeouts() bool { return o.Bounds().RetriesTimeouts }

// NeverSentOnly reports whether every condition the object retries proves
// the request never reached the application, so that a retry repeats
// nothing; true when it does not retry.
func (o Object) NeverSentOnly() bool {
	if o.Attempts == nil || o.Attempts.Value <= 1 {
		return true
	}
	if o.RetryOn == nil {
		return false
	}
	sem := targetSemantics[o.Target]
	for _, c := range o.RetryOn.Value {
		if !slices.ContainsFunc(sem.neverSent, func(n string) bool { return strings.EqualFold(n, c) }) {
			return false
		}
	}
	return true
}

// Retries500 returns the condition under which the object retries a 500
// ("5xx", "http_500", "all-retryable-errors"), "" when it does not.
func (o Object) Retries500() string {
	if o.Attempts == nil || o.Attempts.Value <= 1 || o.RetryOn == nil {
		return ""
	}
	sem := targetSemantics[o.Target]
	for _, c := range o.RetryOn.Value {
		if slices.ContainsFunc(sem.with500, func(w string) bool { return strings.EqualFold(w, c) }) {
			return c
		}
	}
	return ""
}
