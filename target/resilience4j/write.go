// Package resilience4j is the resilience4j target: Spring Boot
// configuration written per group, and read back for check (read.go).
package resilience4j

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes Spring Boot configuration for resilience4j: one
// instance per group of TimeLimiter (per-try timeout), Bulkhead and Retry.
var Target = target.Target{
	Name:     "resilience4j",
	File:     "resilience4j.yaml",
	Summary:  "resilience4j (Spring Boot YAML): timelimiter, bulkhead and retry instances",
	Language: "yaml",
	Comment:  "#",
	Write:    write,
	Reader:   ReadConfig,
	Detect:   Detect,
	Naming:   naming,
	Duration: target.UnitDur,
}

// Exceptions resilience4j's Retry may retry (retryExceptions): for a call
// that is not idempotent only those thrown before a request was sent (a
// refused connection, a name that does not resolve, a connect timeout of
// the JDK's HttpClient); for an idempotent one any I/O failure and the
// TimeLimiter's timeout. Its default, with no retryExceptions, retries
// every exception.
var (
	NeverSent     = []string{"java.net.ConnectException", "java.net.NoRouteToHostException", "java.net.UnknownHostException", "java.net.http.HttpConnectTimeoutException"}
	r4jIdempotent = []string{"java.io.IOException", "java.util.concurrent.TimeoutException"}
)

func write(p *target.Plan, d *target.Doc) error {
	d.Note("resilience4j instances for %q (Spring Boot application.yaml), written by tunetimeout from measured latency.", p.Service)
	d.Note("Spring's aspects decorate a call as Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call))))): the time limit applies to every attempt, and nothing bounds the whole call, so the retries are fitted so that every attempt may time out in full within the deadline.")
	d.Note("The @TimeLimiter aspect needs a CompletionStage (or reactive) return type and does not interrupt the work it stops waiting for.")
	routes := p.GroupRoutes()
	inst := instanceNames(p.Service, routes)
	fits := fitRoutes(routes)
	d.Printf("resilience4j:\n  timelimiter:\n    instances:\n")
	for i, rt := range routes {
		d.Note("instance %s (group %q):", inst[i], rt.Group)
		d.Note("  timelimiter timeoutDuration %s: %s", target.UnitDur(rt.PerTry), rt.PerTryWhy)
		d.Printf("      %s:\n        timeoutDuration: %s\n        cancelRunningFuture: true\n", inst[i], target.UnitDur(rt.PerTry))
	}
	if p.Bulkhead != nil {
		d.Printf("  bulkhead:\n    instances:\n")
		for i, rt := range routes {
			b, why := p.Bulkhead, p.BulkheadWhy
			if rt.Bulkhead != nil {
				b, why = rt.Bulkhead, rt.BulkheadWhy
			}
			d.Note("bulkhead %s maxConcurrentCalls %s; maxWaitDuration 0: a full bulkhead fails fast", inst[i], why)
			d.Printf("      %s:\n        maxConcurrentCalls: %d\n        maxWaitDuration: 0ms\n", inst[i], *b)
		}
	} else {
		d.Note("no bulkhead: the report has no call rate (analyze %s, or timestamps)", usage.Rate)
	}
	connect, cwhy := p.ClusterConnect()
	d.Note("set the HTTP client's connect timeout to %s (%s): resilience4j has none", target.UnitDur(connect), cwhy)
	// Every group gets a retry instance, maxAttempts 1 where no retry fits:
	// a @Retry(name = ...) whose instance is not configured takes the
	// defaults of RetryConfig (maxAttempts 3, waitDuration 500ms, every
	// exception retried, the TimeLimiter's TimeoutException included).
	d.Printf("  retry:\n    instances:\n")
	var retrying []string
	for i, rt := range routes {
		writeRetry(d, inst[i], rt, fits[i])
		if fits[i].attempts > 1 {
			retrying = append(retrying, inst[i])
		}
	}
	writeSwitch(d, retrying)
	return nil
}

// instanceNames names each group's instance: the service, and the group
// after it where there are several.
func instanceNames(service string, routes []target.Route) []string {
	inst := make([]string, len(routes))
	names := target.NewUnique("-")
	for i, rt := range routes {
		n := naming.Service(service)
		if len(routes) > 1 {
			n = naming.Of(n, rt.Group)
		}
		inst[i] = names.Name(n)
	}
	return inst
}

// fitted is a group's retry as it fits the deadline with every attempt
// timing out in full.
type fitted struct {
	attempts int
	worst    time.Duration
}

// fitRoutes fits each route's retries to its deadline (Route.StaticFit)
// and returns how each fits.
func fitRoutes(routes []target.Route) []fitted {
	fits := make([]fitted, len(routes))
	for i, rt := range routes {
		// The wait before retry i: min(randomized(base x 2^i), cap) with a
		// factor of 0.5 (IntervalFunction.ofExponentialRandomBackoff caps
		// after randomizing): at most min(1.5 x base x 2^i, cap).
		wait := func(i int) time.Duration { return min(rt.Window(i)*3/2, rt.BackoffCap) }
		// A connect failure is bounded by the client's connect timeout,
		// which resilience4j does not set: only the time limiter bounds an
		// attempt, whatever its failure.
		// A never-sent failure costs as much as any other (neverSent is
		// the per-try timeout), so retrying never-sent failures alone
		// fits no more attempts: there is nothing to fall back on.
		n, worst := rt.StaticFit(0, rt.PerTry, wait, rt.Attempts)
		fits[i] = fitted{n, worst}
	}
	return fits
}

// writeRetry writes a group's retry instance and its notes: maxAttempts 1
// where no retry fits, else the fitted attempts, their waits and the
// exceptions they retry.
func writeRetry(d *target.Doc, inst string, rt target.Route, f fitted) {
	if f.attempts <= 1 {
		why := rt.AttemptsWhy
		if rt.Attempts > 1 {
			why = fmt.Sprintf("%s, but with every attempt timing out in full only 1 fits the deadline of %s (worst case %s)", rt.AttemptsWhy, target.FmtDur(rt.Deadline), target.FmtDur(f.worst))
		}
		d.Note("retry %s maxAttempts 1, no retries: %s; written so that a @Retry naming it does not take resilience4j's defaults (3 attempts, 500ms apart, every exception retried)", inst, why)
		d.Printf("      %s:\n        maxAttempts: 1\n", inst)
		return
	}
	d.Note("retry %s maxAttempts %d (the first call included): %s", inst, f.attempts, rt.AttemptsWhy)
	if f.attempts < rt.Attempts {
		d.Note("  %d of them: with every attempt failing as slowly as it can and every wait at its largest, more would not fit the deadline of %s", f.attempts, target.FmtDur(rt.Deadline))
	}
	if rt.Deadline > 0 {
		d.Note("  worst case %s, within the deadline of %s", target.FmtDur(f.worst), target.FmtDur(rt.Deadline))
	}
	d.Note("  waitDuration %s doubling up to exponentialMaxWaitDuration %s: %s", target.UnitDur(rt.BackoffBase), target.UnitDur(rt.BackoffCap), rt.BackoffWhy)
	d.Note("  randomizedWaitFactor 0.5 spreads each wait over +/- 50 %% around it, then caps it: resilience4j's jitter is not full jitter (uniform from 0 to the wait); exponentialMaxWaitDuration only applies with the multiplier and the factor set, as here")
	exc := r4jIdempotent
	if rt.NeverSentOnly() {
		exc = NeverSent
		d.Note("  retryExceptions %s: %s, so only failures before the request was sent are retried (resilience4j's default retries every exception, a timeout included)", strings.Join(exc, ", "), rt.IdempotentWhy)
	} else {
		d.Note("  retryExceptions %s: I/O failures and the time limiter's timeout, from %s; status codes need the HTTP client's exception for them (or a resultPredicate)", strings.Join(exc, ", "), strings.Join(rt.RetryOn, ", "))
	}
	d.Note("  resilience4j matches the exception thrown, not its causes: Spring's RestTemplate and WebClient wrap these (ResourceAccessException, WebClientRequestException); with them, point retryExceptionPredicate at a Predicate<Throwable> that walks getCause()")
	d.Printf("      %s:\n        maxAttempts: %d\n        waitDuration: %s\n", inst, f.attempts, target.UnitDur(rt.BackoffBase))
	d.Printf("        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: 2\n        exponentialMaxWaitDuration: %s\n", target.UnitDur(rt.BackoffCap))
	d.Printf("        enableRandomizedWait: true\n        randomizedWaitFactor: 0.5\n        retryExceptions:\n")
	for _, e := range exc {
		d.Printf("        - %s\n", e)
	}
}

// writeSwitch says how to turn the retry instances' retries off
// without a deploy. resilience4j has no switch, and Spring Boot binds
// these properties when the application starts; but RetryAspect looks its
// instance up in the RetryRegistry on every call (retryRegistry.retry(name,
// ...)), so replacing it there (Registry.replace) takes effect on the next
// call. Without code for that, SPRING_APPLICATION_JSON overrides the
// properties at a restart
// (https://docs.spring.io/spring-boot/reference/features/external-config.html#features.external-config.application-json).
func writeSwitch(d *target.Doc, names []string) {
	if len(names) == 0 {
		d.Note("Retries off during an incident: no retry instance here retries.")
		return
	}
	instances := map[string]any{}
	for _, n := range names {
		instances[n] = map[string]int{"maxAttempts": 1}
	}
	props, err := json.Marshal(map[string]any{"resilience4j": map[string]any{"retry": map[string]any{"instances": instances}}})
	if err != nil { // names and numbers only
		panic(err)
	}
	d.Note("Retries off during an incident, without a deploy: resilience4j has no switch, and Spring Boot binds this file when the application starts, but the @Retry aspect looks its instance up in the RetryRegistry on every call, so code the service runs (an admin endpoint) can replace it: retryRegistry.replace(NAME, Retry.of(NAME, RetryConfig.from(retryRegistry.retry(NAME).getRetryConfig()).maxAttempts(1).build())) for NAME in %s; the next call makes one attempt. Without such code, restart the same build with SPRING_APPLICATION_JSON='%s'. Replace them back, or restart without it, to restore the retries.", strings.Join(names, ", "), props)
}

// naming: "<service>-<group>" as DNS labels of at most 40
// characters each (write).
var naming = &target.Naming{
	Service: func(s string) string {
		if n := target.DNSLabel(s, 40); n != "" {
			return n
		}
		return target.DefaultService
	},
	Of: func(svc, group string) string {
		if g := target.DNSLabel(group, 40); g != "" {
			return svc + "-" + g
		}
		return svc
	},
	Lone:  true,
	Names: func(ob target.Object) []string { return []string{ob.Name} },
}
