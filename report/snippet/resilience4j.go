package snippet

// resilience4jTarget writes Spring Boot configuration for resilience4j: one
// instance per group of TimeLimiter (per-try timeout), Bulkhead and Retry.
var resilience4jTarget = Target{
	Name:    "resilience4j",
	File:    "resilience4j.yaml",
	Summary: "resilience4j (Spring Boot YAML): timelimiter, bulkhead and retry instances",
	Comment: "#",
	render:  renderResilience4j,
}

func renderResilience4j(p *plan, d *doc) error {
	d.note("resilience4j instances for %q (Spring Boot application.yaml), written by tunetimeout from measured latency.", p.service)
	d.note("Decorate each call as Retry(TimeLimiter(Bulkhead(call))): the time limit applies to every attempt.")
	inst := make([]string, len(p.routes))
	names := newUnique("-")
	for i, rt := range p.routes {
		n := dnsLabel(p.service, 40)
		if n == "" {
			n = DefaultService
		}
		if len(p.routes) > 1 {
			if g := dnsLabel(rt.group, 40); g != "" {
				n += "-" + g
			}
		}
		inst[i] = names.name(n)
	}
	d.p("resilience4j:\n  timelimiter:\n    instances:\n")
	for i, rt := range p.routes {
		d.note("instance %s (group %q):", inst[i], rt.group)
		d.note("  timelimiter timeoutDuration %s: %s", unitDur(rt.perTry), rt.perTryWhy)
		d.p("      %s:\n        timeoutDuration: %s\n        cancelRunningFuture: true\n", inst[i], unitDur(rt.perTry))
	}
	if p.bulkhead != nil {
		d.p("  bulkhead:\n    instances:\n")
		for i, rt := range p.routes {
			b, why := p.bulkhead, p.bulkheadWhy
			if rt.bulkhead != nil {
				b, why = rt.bulkhead, rt.bulkheadWhy
			}
			d.note("bulkhead %s maxConcurrentCalls %s; maxWaitDuration 0: a full bulkhead fails fast", inst[i], why)
			d.p("      %s:\n        maxConcurrentCalls: %d\n        maxWaitDuration: 0ms\n", inst[i], *b)
		}
	} else {
		d.note("no bulkhead: the report has no call rate (analyze --rate, or timestamps)")
	}
	retries := false
	for _, rt := range p.routes {
		retries = retries || rt.attempts > 1
	}
	if !retries {
		d.note("no retry instances: one attempt per call")
		return nil
	}
	d.p("  retry:\n    instances:\n")
	for i, rt := range p.routes {
		if rt.attempts <= 1 {
			d.note("retry %s: none (%s)", inst[i], rt.attemptsWhy)
			continue
		}
		d.note("retry %s maxAttempts %d (the first call included): %s", inst[i], rt.attempts, rt.attemptsWhy)
		d.note("  waitDuration %s doubling up to exponentialMaxWaitDuration %s: %s", unitDur(rt.backoffBase), unitDur(rt.backoffCap), rt.backoffWhy)
		d.note("  randomizedWaitFactor 0.5 spreads each wait over +/- 50 %% around it: resilience4j's jitter is not full jitter (uniform from 0 to the wait); both together need resilience4j 1.7 or later")
		d.p("      %s:\n        maxAttempts: %d\n        waitDuration: %s\n", inst[i], rt.attempts, unitDur(rt.backoffBase))
		d.p("        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: 2\n        exponentialMaxWaitDuration: %s\n", unitDur(rt.backoffCap))
		d.p("        enableRandomizedWait: true\n        randomizedWaitFactor: 0.5\n")
	}
	return nil
}
