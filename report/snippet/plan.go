package snippet

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/report"
)

// plan is what every target writes: the numbers of each group, in whole
// milliseconds, each with the sentence that says where it comes from.
type plan struct {
	service   string
	namespace string
	routes    []route // the most specific match first, catch-alls last

	// The service-wide values (a cluster, a connection pool): from the one
	// group, or combined over all groups.
	connect     *time.Duration
	connectWhy  string
	bulkhead    *int
	bulkheadWhy string
	budget      *float64 // fraction of requests that may be retried
	budgetWhy   string
}

// route is one group: a route, a method, a location, an instance.
type route struct {
	group string
	match match

	// timeout covers the whole call, all attempts and the backoff between
	// them; perTry bounds one attempt. With one attempt they are equal.
	timeout    time.Duration
	timeoutWhy string
	perTry     time.Duration
	perTryWhy  string
	attempts   int // 1 = no retries
	// attemptsWhy says where the attempts come from.
	attemptsWhy string
	backoffBase time.Duration
	backoffCap  time.Duration
	backoffWhy  string
	jitter      string   // full, equal, decorrelated
	retryOn     []string // connect-failure, timeout, status codes
	idempotent  bool

	connect     *time.Duration
	connectWhy  string
	bulkhead    *int
	bulkheadWhy string
	budget      *float64
}

// retries is the number of retries after the first attempt.
func (r route) retries() int { return r.attempts - 1 }

// newPlan reads the numbers of a report, rounding every duration up to a
// whole millisecond: rounding a timeout up never cuts off more calls, and
// every target can write a whole millisecond.
func newPlan(r *report.Report, o Options) (*plan, error) {
	if r == nil || len(r.Groups) == 0 {
		return nil, errors.New("the report has no groups")
	}
	p := &plan{service: o.Service, namespace: o.Namespace}
	if strings.TrimSpace(p.service) == "" {
		p.service = DefaultService
	}
	if strings.TrimSpace(p.namespace) == "" {
		p.namespace = "default"
	}
	for i := range r.Groups {
		rt, err := newRoute(&r.Groups[i])
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", r.Groups[i].Name, err)
		}
		p.routes = append(p.routes, rt)
	}
	// Targets that take the first match need the most specific first.
	sort.SliceStable(p.routes, func(i, j int) bool { return p.routes[i].match.before(p.routes[j].match) })
	p.combine(r)
	return p, nil
}

func newRoute(g *report.Group) (route, error) {
	rec := g.Recommendation
	if !(rec.TimeoutSeconds > 0) || math.IsInf(rec.TimeoutSeconds, 0) {
		return route{}, fmt.Errorf("timeout_seconds %v is not a positive duration", rec.TimeoutSeconds)
	}
	rt := route{group: g.Name, match: parseMatch(g.Name), attempts: 1, jitter: "full"}
	recTimeout := ceilMs(rec.TimeoutSeconds)
	recWhy := derivation(g, recTimeout)

	pol := g.Policy
	if pol == nil || pol.Attempts < 1 || !(pol.PerTryTimeoutSeconds > 0) {
		// No call policy in the report: one attempt at the recommendation.
		rt.perTry, rt.perTryWhy = recTimeout, recWhy
		rt.timeout, rt.timeoutWhy = recTimeout, recWhy
		rt.attemptsWhy = "no call policy in the report: one attempt, no retries"
	} else {
		rt.attempts = pol.Attempts
		rt.perTry = ceilMs(pol.PerTryTimeoutSeconds)
		if rt.perTry == recTimeout {
			rt.perTryWhy = recWhy
		} else {
			rt.perTryWhy = fmt.Sprintf("%s = the call policy's per-try timeout (%s)", fmtDur(rt.perTry), policyReason(pol))
		}
		rt.attemptsWhy = fmt.Sprintf("%d attempts from the call policy", pol.Attempts)
		if pol.Attempts == 1 {
			rt.attemptsWhy = "1 attempt from the call policy: no retries"
		}
		if pol.RequestedAttempts > pol.Attempts {
			rt.attemptsWhy += fmt.Sprintf(" (%d requested; %d fit the deadline)", pol.RequestedAttempts, pol.Attempts)
		}
		if pol.Jitter != "" {
			rt.jitter = pol.Jitter
		}
		rt.retryOn = append(rt.retryOn, pol.RetryOn...)
		rt.idempotent = pol.Idempotent
		rt.budget = pol.RetryBudget
		if rt.attempts > 1 {
			rt.backoffBase = ceilMs(pol.BackoffBaseSeconds)
			rt.backoffCap = ceilMs(pol.BackoffCapSeconds)
			rt.backoffWhy = fmt.Sprintf("backoff %s doubling up to %s, %s jitter, from the call policy", fmtDur(rt.backoffBase), fmtDur(rt.backoffCap), rt.jitter)
			if rt.backoffCap < rt.backoffBase {
				rt.backoffCap = rt.backoffBase
				rt.backoffWhy += fmt.Sprintf("; its cap is below its base, so the cap is raised to %s", fmtDur(rt.backoffCap))
			}
			worst := pol.WorstCaseSeconds
			if !(worst > 0) {
				worst = float64(rt.attempts)*rt.perTry.Seconds() + backoffTotal(rt).Seconds()
			}
			rt.timeout = ceilMs(worst)
			rt.timeoutWhy = fmt.Sprintf("%s = worst case of %d attempts x %s plus the backoff between them", fmtDur(rt.timeout), rt.attempts, fmtDur(rt.perTry))
			if pol.DeadlineSeconds != nil && *pol.DeadlineSeconds > 0 {
				if dl := ceilMs(*pol.DeadlineSeconds); dl < rt.timeout {
					rt.timeout = dl
					rt.timeoutWhy = fmt.Sprintf("%s = the caller's deadline", fmtDur(dl))
				} else {
					rt.timeoutWhy += fmt.Sprintf(", within the %s deadline", fmtDur(dl))
				}
			}
			if rt.timeout < rt.perTry {
				rt.timeout = rt.perTry
				rt.timeoutWhy = fmt.Sprintf("%s = the per-try timeout: the whole call cannot be shorter than one attempt", fmtDur(rt.timeout))
			}
		} else {
			rt.timeout, rt.timeoutWhy = rt.perTry, rt.perTryWhy
		}
	}
	if rt.attempts > 1 && len(rt.retryOn) == 0 {
		rt.retryOn = []string{"connect-failure", "timeout", "503"}
	}

	if c := rec.ConnectTimeoutSeconds; c != nil && *c > 0 && !math.IsInf(*c, 0) {
		d := ceilMs(*c)
		rt.connect = &d
		rt.connectWhy = fmt.Sprintf("%s = recommended connect timeout", fmtDur(d))
		for _, s := range rec.Steps {
			if s.Rule == "connect" && s.Reason != "" {
				rt.connectWhy = s.Reason
			}
		}
	}
	if b := g.LittlesLaw.Bulkhead; b != nil && *b > 0 {
		rt.bulkhead = b
		rt.bulkheadWhy = fmt.Sprintf("%d = bulkhead", *b)
		if ip := g.LittlesLaw.InFlightPeak; ip != nil {
			rt.bulkheadWhy = fmt.Sprintf("%d = bulkhead (Poisson p99.9 of %s calls in flight at the peak rate)", *b, human.Number(*ip))
		}
	}
	return rt, nil
}

// combine sets the service-wide values from the groups.
func (p *plan) combine(r *report.Report) {
	if len(p.routes) == 1 {
		rt := p.routes[0]
		p.connect, p.connectWhy = rt.connect, rt.connectWhy
		p.bulkhead, p.bulkheadWhy = rt.bulkhead, rt.bulkheadWhy
	} else {
		// The connect timeout is the longest: connecting does not depend on the
		// route.
		differ := false
		for _, rt := range p.routes {
			if rt.connect == nil {
				continue
			}
			if p.connect != nil && *rt.connect != *p.connect {
				differ = true
			}
			if p.connect == nil || *rt.connect > *p.connect {
				p.connect, p.connectWhy = rt.connect, rt.connectWhy+fmt.Sprintf(" (group %q, the longest)", rt.group)
			}
		}
		if p.connect != nil && !differ {
			p.connectWhy = p.routes[0].connectWhy
			for _, rt := range p.routes {
				if rt.connect != nil {
					p.connectWhy = rt.connectWhy
					break
				}
			}
		}
		// The calls in flight of all groups add up; the sum of Poisson
		// variables is Poisson, so the service's bulkhead is the quantile of
		// the summed mean, never less than the largest group's.
		var mean float64
		largest := 0
		known := true
		for i := range r.Groups {
			ll := r.Groups[i].LittlesLaw
			if ll.InFlightPeak == nil || ll.Bulkhead == nil {
				known = false
				break
			}
			mean += *ll.InFlightPeak
			largest = max(largest, *ll.Bulkhead)
		}
		if known {
			b := max(largest, 1, littleslaw.PoissonQuantile(mean, 0.999))
			p.bulkhead = &b
			p.bulkheadWhy = fmt.Sprintf("%d = bulkhead for the whole service (Poisson p99.9 of %s calls in flight at the peak rate, summed over %d groups)", b, human.Number(mean), len(r.Groups))
		}
	}
	// The retry budget is the smallest any group asks for.
	for _, rt := range p.routes {
		if b := rt.budget; b != nil && *b > 0 && (p.budget == nil || *b < *p.budget) {
			v := *b
			p.budget = &v
			p.budgetWhy = fmt.Sprintf("retry budget %s of requests, from the call policy", human.Percent(v))
		}
	}
}

// derivation says how the recommended timeout was reached: "800ms = p99.9
// of 200,000 calls (792ms), rounded up".
func derivation(g *report.Group, t time.Duration) string {
	rec := g.Recommendation
	base := human.Seconds(rec.BaseSeconds)
	if rec.LowerBound {
		base = "at least " + base
	}
	s := fmt.Sprintf("%s = %s of %s calls (%s)", fmtDur(t), human.Quantile(rec.Quantile), human.Count(g.Samples), base)
	for _, st := range rec.Steps {
		switch st.Rule {
		case "quantile", "connect":
		case "tight-tail":
			s += fmt.Sprintf(", raised to %s by the tight-tail rule", human.Seconds(st.Seconds))
		case "network-allowance":
			s += fmt.Sprintf(", %s with the network allowance", human.Seconds(st.Seconds))
		case "round":
			s += ", rounded up"
		case "min", "floor":
			s += fmt.Sprintf(", raised to the %s %s", st.Rule, human.Seconds(st.Seconds))
		case "max":
			s += fmt.Sprintf(", capped at the max %s", human.Seconds(st.Seconds))
		default:
			s += fmt.Sprintf(", %s %s", st.Rule, human.Seconds(st.Seconds))
		}
	}
	return s
}

// policyReason is the call policy's reason for its per-try timeout, or a
// summary.
func policyReason(pol *report.Policy) string {
	for _, st := range pol.Steps {
		if st.Rule == "per-try" && st.Reason != "" {
			return st.Reason
		}
	}
	if pol.DeadlineSeconds != nil {
		return fmt.Sprintf("%d attempts within the %s deadline", pol.Attempts, human.Seconds(*pol.DeadlineSeconds))
	}
	return fmt.Sprintf("%d attempts", pol.Attempts)
}

// backoffTotal is the longest total wait between the attempts of a route:
// base x 2^n capped, summed over the retries.
func backoffTotal(rt route) time.Duration {
	var total time.Duration
	w := rt.backoffBase
	for i := 0; i < rt.retries(); i++ {
		total += min(w, rt.backoffCap)
		if w < rt.backoffCap {
			w *= 2
		}
	}
	return total
}

// ceilMs converts seconds to a duration rounded up to a whole millisecond,
// at least 1ms. The seconds are first rounded to the nanosecond so that
// binary noise (0.8 = 0.80000000000000004) does not add a millisecond.
func ceilMs(s float64) time.Duration {
	if !(s > 0) {
		return time.Millisecond
	}
	const maxSeconds = 100 * 365 * 24 * 3600 // far beyond any timeout; keeps int64 nanoseconds
	s = min(s, maxSeconds)
	ns := int64(math.Round(s * 1e9))
	ms := (ns + 999_999) / 1_000_000
	return time.Duration(max(ms, 1)) * time.Millisecond
}

// fmtDur shows a whole-millisecond duration as a Go duration for the
// header lines: 800ms, 1.25s, 2m0.5s.
func fmtDur(d time.Duration) string { return d.String() }
