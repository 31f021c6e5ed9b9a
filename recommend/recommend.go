// Package recommend turns a latency histogram into a timeout, a connect
// timeout and the reasons for both (docs/method.md#1-the-quantile and
// #2-padding-rules).
//
// The method: take the latency at quantile 1 - f, where f is the share of
// good calls the user accepts to cut off, then apply padding rules (tight
// tail, network allowance, rounding, a 1 ms floor, user bounds). Every rule
// that changed the timeout is one Step with a reason a person can check.
package recommend

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Options are the user's choices for one recommendation.
type Options struct {
	FalseTimeouts    float64       // share of good calls accepted to be cut off, 0 < f < 1; 0.001 -> p99.9
	TightTailRatio   float64       // floor the timeout at this multiple of p50; default 2, 0 turns the rule off
	NetworkAllowance time.Duration // added for clients far from the server
	Min, Max         time.Duration // user bounds; 0 means none
	RTT              time.Duration // round-trip time to the server; 0 = unknown
	Confidence       float64       // confidence of the quantile's interval; default 0.95 (also when 0)
}

// Measured is what was measured of one group beside its latencies, which
// Recommend reads with them: the data, where Options are the user's
// choices. The zero value measured nothing more.
type Measured struct {
	// ConnectTimes are measured connect times (nginx $upstream_connect_time,
	// HAProxy Tc); nil or empty = none. With RTT they give the connect timeout.
	ConnectTimes *histogram.Latency
	// ReusedConnects counts connect times of 0 (requests on kept-alive
	// connections), which are not in ConnectTimes.
	ReusedConnects int64
	// Quantile, when set, answers the quantiles the timeout builds on (the
	// base and the median) in place of h.Quantile: bucketed data knows the
	// bucket that holds a quantile from its fractional counts, where h holds
	// whole calls (histogram.Bucketed.Upper).
	Quantile func(q float64) time.Duration
}

// Step is one rule applied on the way to the timeout, in order.
type Step struct {
	Rule   string        // stable identifier: "quantile", "tight-tail", "network-allowance", "round", "floor", "min", "max", "connect"
	Value  time.Duration // the timeout after this step (for "connect": the connect timeout)
	Reason string        // one sentence for people
}

// Recommendation is a timeout with the steps that produced it.
type Recommendation struct {
	Quantile       float64            // 1 - FalseTimeouts
	Base           time.Duration      // the measured quantile
	LowerBound     bool               // Base is only a lower bound (censored samples at or below it, or inside a pile-up at an existing timeout)
	Interval       histogram.Interval // confidence interval of Base
	Timeout        time.Duration
	RoundingStep   time.Duration // the rounding step used at Base's magnitude
	ConnectTimeout time.Duration // 0 when unknown
	Connect        Connect       // the connect-timeout rule's answer, ConnectTimeout with its bounds
	Steps          []Step
	// Findings are the warnings about the recommendation, most important
	// first, with their codes and numbers (internal/finding).
	Findings []finding.Finding
	// Warnings are the findings' messages, in the same order: kept for
	// callers that read strings.
	Warnings []string
}

// precision is the histogram's relative resolution (3 significant digits):
// values within t/precision of each other may share a bucket.
const precision = 1000

// MinTimeout is the smallest timeout Recommend returns: Istio and the
// Kubernetes Gateway API cannot express less than one millisecond
// (docs/method.md#2-padding-rules).
const MinTimeout = time.Millisecond

// fewAbove is the number of samples above the chosen quantile below which
// the estimate rests on too few observations (docs/method.md#1-the-quantile).
const fewAbove = 10

// ErrNoSamples is returned by Recommend for an empty histogram.
var ErrNoSamples = errors.New("no samples: nothing to base a timeout on")

// DefaultOptions returns the usual starting point: cut off 0.1 % of good
// calls (p99.9), floor the timeout at 2 x p50, 95 % confidence intervals.
func DefaultOptions() Options {
	return Options{FalseTimeouts: 0.001, TightTailRatio: 2, Confidence: 0.95}
}

// Validate reports every problem with o at once (nil when there is none),
// as Recommend would before it looks at a histogram: callers can check the
// options before reading any data. Recommend wraps the same error in
// "invalid options: ".
func (o Options) Validate() error {
	_, err := o.validate()
	return err
}

// validate checks o and returns it with defaults filled in.
func (o Options) validate() (Options, error) {
	var errs []error
	if !(o.FalseTimeouts > 0 && o.FalseTimeouts < 1) {
		errs = append(errs, fmt.Errorf("false-timeout rate %v must lie between 0 and 1, both excluded (0.001 is 0.1 %%, p99.9)", o.FalseTimeouts))
	}
	if !(o.TightTailRatio >= 0) || math.IsInf(o.TightTailRatio, 0) {
		errs = append(errs, fmt.Errorf("tight-tail ratio %v must be a finite number >= 0 (0 turns the rule off)", o.TightTailRatio))
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultOptions().Confidence
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		errs = append(errs, fmt.Errorf("confidence %v must lie between 0 and 1, both excluded (0.95 for 95 %%)", o.Confidence))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"network allowance", o.NetworkAllowance}, {"minimum", o.Min}, {"maximum", o.Max}, {"RTT", o.RTT}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v must not be negative", d.name, d.v))
		}
	}
	if o.Max > 0 && o.Max < MinTimeout {
		errs = append(errs, fmt.Errorf("maximum %v is below %v, the smallest timeout gateway and Istio configs can express", o.Max, MinTimeout))
	}
	if o.Min > 0 && o.Max > 0 && o.Min > o.Max {
		errs = append(errs, fmt.Errorf("minimum %v is above maximum %v", o.Min, o.Max))
	}
	return o, errors.Join(errs...)
}

// Recommend derives a timeout from h. The steps, in order: the quantile
// 1 - FalseTimeouts; the tight-tail floor; the network allowance; rounding to
// a value people write in configs; a 1 ms floor; the user's minimum and
// maximum; last, the connect timeout (which does not change Timeout). It
// returns an error for invalid options (all problems at once) and
// ErrNoSamples for an empty histogram.
func Recommend(h *histogram.Latency, o Options) (Recommendation, error) {
	return RecommendMeasured(h, Measured{}, o)
}

// RecommendMeasured is Recommend with what else was measured of the group
// (connect times, the quantiles of bucketed data).
func RecommendMeasured(h *histogram.Latency, m Measured, o Options) (Recommendation, error) {
	o, err := o.validate()
	if err != nil {
		return Recommendation{}, fmt.Errorf("invalid options: %w", err)
	}
	if h == nil || h.Count() == 0 {
		return Recommendation{}, ErrNoSamples
	}
	q := 1 - o.FalseTimeouts
	quantile := h.Quantile
	if m.Quantile != nil {
		quantile = m.Quantile
	}
	r := Recommendation{Quantile: q}
	r.Base = quantile(q)
	r.Interval = h.QuantileInterval(q, o.Confidence)
	r.LowerBound = h.QuantileIsLowerBound(q)
	_, r.RoundingStep = RoundUp(r.Base)

	p := padding{r: &r, h: h, o: o, name: human.Quantile(q), t: r.Base}
	p.quantile()
	p.tightTail(quantile)
	p.networkAllowance()
	p.round()
	p.bounds()
	r.Timeout = p.t

	// Connect timeout: last, and it leaves Timeout alone.
	r.Connect = ConnectTimeout(m.ConnectTimes, m.ReusedConnects, o.RTT, q, r.Timeout)
	if c := r.Connect.Timeout; c > 0 {
		r.ConnectTimeout = c
		r.Steps = append(r.Steps, Step{Rule: "connect", Value: c, Reason: r.Connect.Reason})
	}

	// Warnings, most important first.
	inPile := r.warnPileUp(h, p.name)
	r.warnSamples(h, o.FalseTimeouts, p.name, inPile)
	r.Warnings = finding.Messages(r.Findings)
	return r, nil
}

// padding is a recommendation being made: the timeout t its steps have
// reached so far, from the quantile r.Base of h, under the options o;
// name is the quantile's ("p99.9").
type padding struct {
	r    *Recommendation
	h    *histogram.Latency
	o    Options
	name string
	t    time.Duration
}

// step adds a step of rule to the recommendation, at the timeout reached.
func (p *padding) step(rule, format string, args ...any) {
	p.r.Steps = append(p.r.Steps, Step{Rule: rule, Value: p.t, Reason: fmt.Sprintf(format, args...)})
}

// quantile is step 1, the quantile.
func (p *padding) quantile() {
	// Of the sample of rank ceil(q N) at most f N lie above (the rank rule
	// of histogram.Latency.Quantile): the reason says how many do. Base is
	// the highest value of its bucket (or a value declared exact), so the
	// count above it is exact, not a bound.
	n, base := p.h.Count(), p.r.Base
	above := p.h.CountAbove(base)
	p.step("quantile", "%s of %s is %s: %s slower (%s; at most the %s asked for)",
		p.name, human.Calls(n), human.Duration(base), human.Calls(above), human.Percent(float64(above)/float64(n)), human.Percent(p.o.FalseTimeouts))
}

// tightTail is step 2, the tight tail: a timeout close to the median
// fires on noise. quantile reads the median.
func (p *padding) tightTail(quantile func(float64) time.Duration) {
	if p.o.TightTailRatio <= 0 {
		return
	}
	p50 := quantile(0.5)
	floor := time.Duration(math.Ceil(p.o.TightTailRatio * float64(p50)))
	if p.t < floor {
		p.t = floor
		p.step("tight-tail", "%s (%s) is below %s x the median (%s): a timeout that close to the median fires on ordinary noise, a GC pause or one TCP retransmission, so it is raised to %s",
			p.name, human.Duration(p.r.Base), formatFloat(p.o.TightTailRatio), human.Duration(p50), human.Duration(p.t))
	}
}

// networkAllowance is step 3, the network allowance: the server's
// measurements miss the client's network.
func (p *padding) networkAllowance() {
	if p.o.NetworkAllowance > 0 {
		before := p.t
		p.t += p.o.NetworkAllowance
		p.step("network-allowance", "latency measured at the server does not include the client's network, so %s of network allowance is added (%s to %s)",
			human.Duration(p.o.NetworkAllowance), human.Duration(before), human.Duration(p.t))
	}
}

// round is step 4, rounding to a value people write in configs, always
// shown; and the floor: configs cannot express less than 1 ms.
func (p *padding) round() {
	h, t := p.h, p.t
	rounded, rstep := RoundUp(t)
	if below := rounded - rstep; rounded != t && below > 0 && t-below <= t/precision && h.CountAbove(below) == h.CountAbove(t) {
		// The histogram reports the top of the bucket a value fell into, up
		// to 0.1 % above it. Rounding that up a whole step would pad for an
		// artefact of the histogram. Only when no call can lie between
		// (CountAbove is an upper bound: a bucket that straddles below
		// counts as above it): a timeout below the quantile would cut off
		// more than the share asked for. So an exact 500ms of bucketed data
		// (a Prometheus le) rounds down, while calls recorded in 500ms's
		// bucket (499.712ms to 500.223ms) may lie above 500ms and do not.
		p.t = below
		p.step("round", "%s is within the histogram's precision (0.1 %%) of %s, a value people write in configs",
			human.Duration(t), human.Duration(p.t))
	} else if rounded != t {
		p.t = rounded
		p.step("round", "%s is rounded up to %s, a value people write in configs (steps of %s at this size)",
			human.Duration(t), human.Duration(p.t), human.Duration(rstep))
	} else {
		p.step("round", "%s is already a value people write in configs", human.Duration(t))
	}

	// The floor: configs cannot express less than 1 ms.
	if p.t < MinTimeout {
		before := p.t
		p.t = MinTimeout
		p.step("floor", "%s is raised to %s: gateway and Istio configs cannot express a shorter timeout",
			human.Duration(before), human.Duration(p.t))
	}
}

// bounds is step 5, the user's bounds, and the finding of a maximum below
// the quantile.
func (p *padding) bounds() {
	o, r := p.o, p.r
	if o.Min > 0 && p.t < o.Min {
		before := p.t
		p.t = o.Min
		p.step("min", "you set a minimum of %s, so the timeout is raised from %s", human.Duration(o.Min), human.Duration(before))
	}
	if o.Max > 0 && p.t > o.Max {
		before := p.t
		p.t = o.Max
		p.step("max", "you set a maximum of %s, so the timeout is lowered from %s", human.Duration(o.Max), human.Duration(before))
		if o.Max < r.Base {
			cut := p.h.FractionAbove(o.Max)
			r.warn(finding.MaxBelowQuantile, finding.Fields{"max_seconds": o.Max, "quantile": r.Quantile, "base_seconds": r.Base,
				"cut_off_fraction": cut, "false_timeouts_fraction": o.FalseTimeouts},
				"the maximum of %s you set is below the measured %s (%s): it cuts off at most %s of calls instead of %s",
				human.Duration(o.Max), p.name, human.Duration(r.Base), human.Percent(cut), human.Percent(o.FalseTimeouts))
		}
	}
}

// warn adds a finding to r.
func (r *Recommendation) warn(code finding.Code, fields finding.Fields, format string, args ...any) {
	r.Findings = append(r.Findings, finding.Newf(code, fields, format, args...))
}

// warnPileUp adds the findings of a pile-up of h (an existing timeout)
// and of a quantile that is a lower bound; inPile: the quantile falls
// into the pile-up.
func (r *Recommendation) warnPileUp(h *histogram.Latency, name string) (inPile bool) {
	q := r.Quantile
	pileAt, pileN, pile := PileUp(h)
	inPile = pile && r.Base >= pileEdge(pileAt)
	if inPile || r.LowerBound {
		r.LowerBound = true
		code, at := finding.LowerBound, r.Base
		why := "censored calls (timeouts) lie at or below it, and they took at least their recorded time, maybe longer"
		if inPile {
			code, at = finding.LowerBoundPileUp, pileAt
			why = fmt.Sprintf("it falls into the pile-up at %s, where calls were cut off by an existing timeout", human.Duration(pileAt))
		}
		r.warn(code, finding.Fields{"quantile": q, "at_least_seconds": at},
			"the true %s is at least %s, not measured: %s; measure without that timeout (or with a longer one) to see the tail",
			name, human.Duration(at), why)
	}
	if pile {
		share := float64(pileN) / float64(h.Count())
		r.warn(finding.CensoredPileUp, finding.Fields{"calls": pileN, "fraction": share, "at_seconds": pileAt},
			"%s calls (%s) end at %s, the largest value: this looks like an existing timeout of %s; latency beyond it is unknown",
			human.Count(pileN), human.Percent(share), human.Duration(pileAt), human.Duration(pileAt))
	}
	return inPile
}

// warnSamples adds the findings of what h holds too little of, or could
// not hold: too few calls for the quantile, too few above it (unless
// inPile), censored calls, samples out of range. f is the false
// timeouts' share.
func (r *Recommendation) warnSamples(h *histogram.Latency, f float64, name string, inPile bool) {
	q, n := r.Quantile, h.Count()
	if float64(n)*f < 1 {
		oneIn := int64(math.Round(1 / f))
		r.warn(finding.FewSamples, finding.Fields{"samples": n, "one_in": oneIn, "quantile": q},
			"only %s: fewer than needed to see one in %s, so %s is at best the largest sample",
			human.Calls(n), human.Count(oneIn), name)
	}
	// Inside a pile-up the interval only brackets the existing timeout; the
	// warnings above already say what is unknown.
	if iv := r.Interval; iv.Above < fewAbove && !inPile {
		hi := "beyond the largest sample"
		var hiSeconds any // null: beyond the largest sample
		if iv.HiKnown {
			hi, hiSeconds = human.Duration(iv.Hi), iv.Hi
		}
		few := "only " + human.Calls(iv.Above) + " lie"
		switch iv.Above {
		case 0:
			few = "no call lies"
		case 1:
			few = "only 1 call lies"
		}
		r.warn(finding.FewAbove, finding.Fields{"quantile": q, "samples_above": iv.Above, "low_seconds": iv.Lo,
			"high_seconds": hiSeconds, "confidence": iv.Confidence},
			"%s above %s; the true %s is between %s and %s (%s confidence)",
			few, name, name, human.Duration(iv.Lo), hi, human.Percent(iv.Confidence))
	}
	if c := h.Censored(); c > 0 {
		were := "were"
		if c == 1 {
			were = "was"
		}
		share := float64(c) / float64(n)
		r.warn(finding.Censored, finding.Fields{"censored": c, "fraction": share},
			"%s (%s) %s censored, cut off because they were slow (a timeout, a 504, an nginx 499): they are kept as lower bounds, each at least as long as recorded",
			human.Calls(c), human.Percent(share), were)
	}
	if below, above := h.OutOfRange(); below+above > 0 {
		r.warn(finding.OutOfRange, finding.Fields{"samples": below + above, "negative": below, "too_long": above, "highest_seconds": histogram.Highest},
			"%s samples were not recorded, being out of the histogram's range: %s negative and %s longer than %s",
			human.Count(below+above), human.Count(below), human.Count(above), human.Duration(histogram.Highest))
	}
}

// pileEdge is the lower edge of a pile-up at max: timer jitter spreads calls
// cut off by one timeout over about 1 % below it.
func pileEdge(max time.Duration) time.Duration {
	return time.Duration(float64(max) * 0.99)
}

// PileUp detects a spike of samples at the maximum that looks like an
// existing timeout: latency recorded by a client whose timeout is T0 never
// exceeds T0, so the calls that would have taken longer all end at T0
// (docs/method.md#3-censoring). It reports the maximum, the number of samples in
// the spike and whether there is one.
//
// With M the maximum, the spike holds the samples within 1 % below M (timer
// jitter); it is compared with the samples in the 9 % below that. It counts
// as a pile-up when it holds at least 5 samples, at least 0.05 % of all
// samples, at least 3 times as many as the 9 % below, and at most half of
// all samples (a spike holding most samples is the body of the distribution,
// not a cut-off tail). The 0.05 % keeps the thin, smooth end of a long tail
// from counting: in the worked example's mixture (200,000 calls,
// docs/method.md#12-the-worked-example) the top 1 %
// below the maximum holds a handful of calls, while clamping it at 500 ms
// puts about 2,000 there against a few hundred in the 9 % below.
//
// Caveat: with coarse timestamps (whole milliseconds) and a maximum of a few
// milliseconds, the 9 % below M may hold no distinct value at all; such data
// can be flagged although it has no pile-up.
func PileUp(h *histogram.Latency) (at time.Duration, n int64, ok bool) {
	if h == nil {
		return 0, 0, false
	}
	count := h.Count()
	m := h.Max()
	if count == 0 || m <= 0 {
		return 0, 0, false
	}
	edge := pileEdge(m)
	pile := h.CountBetween(edge, m)
	before := h.CountBetween(time.Duration(float64(m)*0.9), edge-time.Microsecond)
	need := max(5, int64(math.Ceil(0.0005*float64(count))), 3*before)
	if pile >= need && 2*pile <= count {
		return m, pile, true
	}
	return m, pile, false
}

// RoundUp rounds d up to a value people write in configs and returns it with
// the step it used. With d written in units of its magnitude (p <= d < 10p,
// p a power of ten): a leading digit of 1-4 rounds up to two significant
// digits (step p/10), 5-9 to a multiple of 5p/10 (step p/2). 788ms -> 800ms
// (step 50ms), 412ms -> 420ms (10ms), 1.05s -> 1.1s, 5.01s -> 5.5s,
// 9.6s -> 10s, 23.4ms -> 24ms; round values stay. The step is at least 1µs,
// so sub-microsecond parts round up to whole microseconds (4.3µs -> 5µs).
// d <= 0 gives (0, 0). The arithmetic is in integer nanoseconds.
func RoundUp(d time.Duration) (rounded, step time.Duration) {
	if d <= 0 {
		return 0, 0
	}
	p := int64(1)
	for p <= int64(d)/10 {
		p *= 10
	}
	if int64(d)/p < 5 {
		step = time.Duration(p / 10)
	} else {
		step = time.Duration(p / 2)
	}
	step = max(step, time.Microsecond)
	if d > math.MaxInt64-step { // the next multiple would overflow
		return d, step
	}
	return (d + step - 1) / step * step, step
}

// Candidates returns the candidate timeouts to show next to r: the 1-2.5-5
// series (10ms, 25ms, 50ms, 100ms, ...) from the first value at or above
// 2 x p50 (at least 1ms) up to the first at or above 2 x r.Timeout, plus
// r.Timeout and RoundUp(p99); sorted and without duplicates. When that is
// more than 9 values the series is thinned out evenly, keeping its ends.
func Candidates(h *histogram.Latency, r Recommendation) []time.Duration {
	const most = 9
	if h == nil || h.Count() == 0 || r.Timeout <= 0 {
		return nil
	}
	from := max(2*h.Quantile(0.5), MinTimeout)
	to := 2 * r.Timeout
	var series []time.Duration
	for _, v := range series125(from) {
		series = append(series, v)
		if v >= to {
			break
		}
	}
	p99, _ := RoundUp(h.Quantile(0.99))
	extra := []time.Duration{r.Timeout}
	if p99 > 0 {
		extra = append(extra, p99)
	}
	slices.Sort(extra)
	extra = slices.Compact(extra)
	if len(series)+len(extra) > most {
		series = thin(series, most-len(extra))
	}
	out := append(series, extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

// series125 returns the 1-2.5-5 series (1µs, 2.5µs, 5µs, 10µs, ...) from
// the first value >= from up to the largest that fits in a Duration.
func series125(from time.Duration) []time.Duration {
	var out []time.Duration
	for p := time.Microsecond; p <= math.MaxInt64/10; p *= 10 {
		for _, v := range []time.Duration{p, p * 5 / 2, 5 * p} {
			if v >= from {
				out = append(out, v)
			}
		}
	}
	return out
}

// thin keeps k values of s, evenly spread, always the first and the last.
func thin(s []time.Duration, k int) []time.Duration {
	if k >= len(s) {
		return s
	}
	if k <= 1 {
		return s[len(s)-1:]
	}
	out := make([]time.Duration, 0, k)
	for i := range k {
		out = append(out, s[int(math.Round(float64(i)*float64(len(s)-1)/float64(k-1)))])
	}
	return out
}

// NetworkPreset is a named network allowance: the worst-case time the
// client's own network adds to latency measured at the server.
type NetworkPreset struct {
	Name      string
	Allowance time.Duration
	Why       string
}

// NetworkPresets are the names ParseNetworkAllowance accepts, nearest first.
// The allowance covers a request and its response on a warm connection (one
// round trip, with room for a slow one); connecting is the connect timeout's
// business.
var NetworkPresets = []NetworkPreset{
	// The latency was measured next to the client, or the client is in the
	// same datacenter: nothing to add.
	{"datacenter", 0, "clients in the same datacenter as the server"},
	// Availability zones of one cloud region are tens of kilometres apart
	// (AWS: within 100 km) and documented to be single-digit milliseconds
	// apart; 10 ms covers a cross-zone round trip with room to spare.
	{"region", 10 * time.Millisecond, "clients in another zone of the same cloud region (cross-zone round trips are single-digit ms)"},
	// One intercontinental round trip: Europe-US east is about 80-100 ms,
	// US-Asia about 150 ms, Europe-Australia 250-300 ms. 300 ms covers the
	// farthest pairs once.
	{"internet", 300 * time.Millisecond, "clients on the internet (one intercontinental round trip is up to about 300ms)"},
	// Slow mobile networks: round trips of several hundred milliseconds on
	// 3G or congested cells, and a radio woken from idle adds hundreds of
	// milliseconds (LTE) to more than a second (3G) before the first byte.
	{"mobile", time.Second, "clients on mobile networks (slow round trips of several hundred ms plus the radio waking up)"},
}

// ParseNetworkAllowance reads a preset name from NetworkPresets or a Go
// duration ("150ms").
func ParseNetworkAllowance(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for _, p := range NetworkPresets {
		if strings.EqualFold(s, p.Name) {
			return p.Allowance, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		names := make([]string, len(NetworkPresets))
		for i, p := range NetworkPresets {
			names[i] = fmt.Sprintf("%s (%v)", p.Name, p.Allowance)
		}
		return 0, fmt.Errorf("network allowance %q is neither a preset, one of %s, nor a duration such as 150ms", s, strings.Join(names, ", "))
	}
	if d < 0 {
		return 0, fmt.Errorf("network allowance %q must not be negative", s)
	}
	return d, nil
}

// ParsePercent reads a share of calls written as a percentage ("0.1%") or
// as a ratio of whole numbers ("1/1000"), and returns the fraction. The
// share must lie strictly between 0 and 1 (0 % and 100 %).
//
// A bare number is refused: "0.1" reads as 0.1 % to some and as a
// fraction of 0.1 (10 %) to others, and taking the wrong one gives a
// timeout at p90 instead of p99.9. The error names both readings.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if n, m, ok := strings.Cut(t, "/"); ok {
		num, err1 := strconv.ParseUint(strings.TrimSpace(n), 10, 63)
		den, err2 := strconv.ParseUint(strings.TrimSpace(m), 10, 63)
		if err1 != nil || err2 != nil || den == 0 {
			return 0, fmt.Errorf("%q is not a ratio of whole numbers such as 1/1000", s)
		}
		if num == 0 || num >= den {
			return 0, fmt.Errorf("%q must lie strictly between 0 %% and 100 %%", s)
		}
		return float64(num) / float64(den), nil
	}
	num, pct := strings.CutSuffix(t, "%")
	num = strings.TrimSpace(num)
	var v float64
	var err error
	if !strings.ContainsAny(num, "eE") {
		// "0.1" + "e-2" is parsed as the exact decimal 0.001, so 0.1% and
		// 1/1000 give the same float64.
		v, err = strconv.ParseFloat(num+"e-2", 64)
	} else {
		v, err = strconv.ParseFloat(num, 64)
		v /= 100
	}
	if err != nil || num == "" || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a percentage (0.1%%) or a ratio (1/1000)", s)
	}
	if !pct {
		// The two readings: num percent, or the fraction num (num x 100 %).
		asFraction, _ := strconv.ParseFloat(num+"e2", 64)
		if strings.ContainsAny(num, "eE") {
			asFraction = 100 * 100 * v
		}
		switch {
		case !(v > 0):
			return 0, fmt.Errorf("%q must lie strictly between 0 %% and 100 %%", s)
		case v*100 >= 1:
			return 0, fmt.Errorf("%q is not a fraction below 1: write %s%% for a percentage", s, num)
		}
		return 0, fmt.Errorf("%q is ambiguous: write %s%% for a percentage, or %s%% (a fraction of %s); a ratio such as 1/1000 is read as a fraction",
			s, num, strconv.FormatFloat(asFraction, 'f', -1, 64), num)
	}
	if !(v > 0 && v < 1) {
		return 0, fmt.Errorf("%q must lie strictly between 0 %% and 100 %%", s)
	}
	return v, nil
}

// formatFloat shows a ratio without trailing zeros: 2 -> "2", 1.5 -> "1.5".
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// OneLostSYN is the shortest connect timeout that survives one lost SYN:
// Linux retransmits it after its initial retransmission timeout of 1 s
// (RFC 6298 section 2.1; ip-sysctl tcp_syn_retries), and the handshake
// then needs its round trip: 1 s rounded up with room for it. A longer
// one waits for the second retransmission, 3 s after the first SYN, which
// no call should; a shorter one turns a lost SYN into a failed connect
// (fine where connect failures are retried, as they are for every call).
const OneLostSYN = 1100 * time.Millisecond

// Connect is the connect-timeout rule's answer for one group: the one rule
// analyze recommends with and check holds configs to
// (docs/method.md#10-connect-timeouts).
type Connect struct {
	// Timeout is the recommended connect timeout: the q-quantile of the
	// measured connects, never below twice their median, and 3 x the RTT
	// when given, the larger of the two, rounded up, at least MinTimeout,
	// at most the call's timeout. 0 when nothing says what a connect costs
	// (no connect measured, no RTT).
	Timeout time.Duration
	// Longest is the longest reasonable connect timeout: the larger of
	// Timeout and OneLostSYN, at most the call's timeout. A longer one
	// waits out a second lost SYN, or more, for nothing.
	Longest time.Duration
	// Measured counts the real connects measured; Reused the connect
	// times of 0 (a request sent on a kept-alive connection connects
	// nothing), which are not connects.
	Measured, Reused int64
	Reason           string // one sentence for people
}

// ConnectTimeout applies the connect-timeout rule to a group's measured
// connects (nil or empty: none; connect times of 0 counted apart, as
// reused), its reused connections, the RTT (0: unknown), the quantile q
// and the call's timeout.
func ConnectTimeout(connects *histogram.Latency, reused int64, rtt time.Duration, q float64, timeout time.Duration) Connect {
	out := Connect{Reused: reused}
	var c time.Duration
	var why []string
	if connects != nil {
		out.Measured = connects.Count()
	}
	if out.Measured > 0 {
		base := connects.Quantile(q)
		c = max(base, 2*connects.Quantile(0.5))
		why = append(why, fmt.Sprintf("%s of %s measured connects is %s (median %s; never below twice the median)",
			human.Quantile(q), human.Count(out.Measured), human.Duration(base), human.Duration(connects.Quantile(0.5))))
	}
	if rtt > 0 {
		c = max(c, 3*rtt)
		why = append(why, fmt.Sprintf("a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of %s", human.Duration(rtt)))
	}
	reusedNote := ""
	if reused > 0 {
		reusedNote = fmt.Sprintf("; %s connect times of 0 were requests on reused keepalive connections, not connects", human.Count(reused))
	}
	out.Longest = OneLostSYN
	if timeout > 0 {
		out.Longest = min(out.Longest, timeout)
	}
	if c == 0 && len(why) == 0 {
		if reused > 0 {
			out.Reason = fmt.Sprintf("no connect times: all %s measured were 0, requests on reused keepalive connections that connected nothing", human.Count(reused))
		}
		return out
	}
	c, _ = RoundUp(c)
	c = max(c, MinTimeout)
	capped := ""
	if timeout > 0 && c > timeout {
		c = timeout
		capped = fmt.Sprintf(", capped at the timeout of %s", human.Duration(timeout))
	}
	out.Timeout = c
	out.Longest = max(out.Longest, c)
	syn := "; at 1 s or more it survives one lost SYN, which Linux retransmits after about 1 s"
	if c < time.Second {
		syn = "; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)"
	}
	out.Reason = fmt.Sprintf("%s, rounded up: %s%s%s%s", strings.Join(why, "; the larger of the two, "), human.Duration(c), capped, syn, reusedNote)
	return out
}
