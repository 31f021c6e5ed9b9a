package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// The closed loop (docs/metastability.md): one dependency with Workers
// workers and a FIFO queue serves requests that arrive at random (Poisson,
// open loop) at Rate per second, each running the call policy. A worker
// takes the queue's head and serves it for a time drawn from the measured
// latency (times the trigger's factor during a slowdown). An attempt whose
// per-try timeout fires ends the caller's wait, not the server's work: the
// attempt stays in the queue, or in service, and takes a worker's time for
// nobody, unless the server drops expired work (DropExpired: when a worker
// reaches it, at no cost). The caller then retries as the policy says
// (backoff, deadline, retry budget), and the retry is more load on the
// same queue: the loop of a metastable failure (Bronson et al., HotOS
// 2021; Huang et al., OSDI 2022).
//
// Time goes from event to event (a binary heap of arrivals, timeouts,
// backoffs and completions); nothing is kept per call beyond its life, so
// memory is bounded by the work in flight, and the queue, which is bounded
// as StopBacklog says.

// Trigger kinds.
const (
	TriggerSlow   = "slow"   // service times x Factor
	TriggerOutage = "outage" // every attempt fails fast (refused)
	TriggerSpike  = "spike"  // arrivals x Factor
)

// Trigger is what knocks the dependency off balance for a while.
type Trigger struct {
	Kind     string
	Factor   float64 // slow and spike; 0 for an outage
	Duration time.Duration
}

// ParseTrigger reads slow:3x:60s, outage:30s or spike:2x:30s.
func ParseTrigger(s string) (Trigger, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	bad := func(why string) (Trigger, error) {
		return Trigger{}, fmt.Errorf("%q is not a trigger (%s): write slow:3x:60s, outage:30s or spike:2x:30s", s, why)
	}
	var t Trigger
	t.Kind = strings.ToLower(parts[0])
	switch t.Kind {
	case TriggerSlow, TriggerSpike:
		if len(parts) != 3 {
			return bad("a factor and a duration")
		}
		f, err := strconv.ParseFloat(strings.TrimSuffix(strings.ToLower(parts[1]), "x"), 64)
		if err != nil || !(f >= 1) || math.IsInf(f, 0) || f > 1000 {
			return bad("the factor must lie between 1x and 1000x")
		}
		t.Factor = f
	case TriggerOutage:
		if len(parts) != 2 {
			return bad("a duration")
		}
	default:
		return bad("unknown kind")
	}
	d, err := time.ParseDuration(parts[len(parts)-1])
	if err != nil || d <= 0 {
		return bad("the duration must be positive, e.g. 60s")
	}
	t.Duration = d
	return t, nil
}

// String is the trigger as ParseTrigger reads it: slow:3x:1m.
func (t Trigger) String() string {
	d := t.Duration.String()
	if strings.HasSuffix(d, "m0s") {
		d = strings.TrimSuffix(d, "0s")
	}
	if strings.HasSuffix(d, "h0m") {
		d = strings.TrimSuffix(d, "0m")
	}
	if t.Kind == TriggerOutage {
		return t.Kind + ":" + d
	}
	return t.Kind + ":" + strconv.FormatFloat(t.Factor, 'g', -1, 64) + "x:" + d
}

// Defaults of the closed loop.
const (
	// DefaultUtilization is the share of its capacity the dependency is
	// busy with at the rate when --workers and --capacity are not given:
	// Little's law gives the workers busy at the rate (rate x mean service
	// time); a server with no more than that is at 100 % and has no queue
	// that ever drains, so the default leaves 10 % spare.
	DefaultUtilization = 0.9
	// DefaultTriggerAt, DefaultLoopDuration and DefaultRecoverWithin are
	// --trigger-at, --duration and --recover-within.
	DefaultTriggerAt     = time.Minute
	DefaultLoopDuration  = 10 * time.Minute
	DefaultRecoverWithin = 5 * time.Minute
	// DefaultLoopWindow is the window the requests are judged in, by the
	// time they arrived: thousands of requests each at the rates of a
	// real service, so that 1 % is above the noise.
	DefaultLoopWindow = 5 * time.Second
	// MaxQueue is the most attempts the queue holds before the run is
	// ended (16 bytes each: 64 MiB).
	MaxQueue = 1 << 22
	// MaxLoopWorkers bounds Workers.
	MaxLoopWorkers = 1 << 20
	// maxSeriesPoints bounds the series: a longer run has wider steps.
	maxSeriesPoints = 600
)

// Recovery thresholds: a window after the trigger is back to normal when
// its success share is within GoodputTolerance of the share before the
// trigger and its attempts per request within AttemptsTolerance of theirs.
// The dependency is back when RecoveryStreak windows in a row are, and
// the windows from them to the end of the run are too, taken together (a
// single window of a loaded server may fall short by chance; a run that
// falls back is not recovered). The recovery time is the end of the last
// window not normal before that streak, from the trigger's end.
const (
	GoodputTolerance  = 0.01
	AttemptsTolerance = 0.01
	RecoveryStreak    = 3
)

// LoopOptions are the dependency, the load and the trigger.
type LoopOptions struct {
	Workers     int  // calls served at once
	Queue       int  // most attempts waiting; 0 = unbounded
	DropExpired bool // a worker skips an attempt whose caller gave up
	Rate        float64
	Trigger     Trigger
	TriggerAt   time.Duration
	Duration    time.Duration
	// RecoverWithin is how long after the trigger ends the dependency
	// has to be back to normal.
	RecoverWithin time.Duration
	Window        time.Duration // 0 = DefaultLoopWindow
	FailLatency   time.Duration // a refused or rejected attempt; 0 = DefaultFailLatency
	Seed          uint64
}

func (o LoopOptions) withDefaults() LoopOptions {
	if o.Window == 0 {
		o.Window = DefaultLoopWindow
	}
	if o.FailLatency == 0 {
		o.FailLatency = DefaultFailLatency
	}
	if o.TriggerAt == 0 {
		o.TriggerAt = DefaultTriggerAt
	}
	if o.Duration == 0 {
		o.Duration = DefaultLoopDuration
	}
	if o.RecoverWithin == 0 {
		o.RecoverWithin = DefaultRecoverWithin
	}
	return o
}

// Validate says what is wrong with o for policy p.
func (o LoopOptions) Validate(p recommend.Policy) error {
	o = o.withDefaults()
	var errs []error
	if o.Workers < 1 || o.Workers > MaxLoopWorkers {
		errs = append(errs, fmt.Errorf("workers %d must lie between 1 and %d", o.Workers, MaxLoopWorkers))
	}
	if o.Queue < 0 || o.Queue > MaxQueue {
		errs = append(errs, fmt.Errorf("queue %d must lie between 0 (unbounded) and %d", o.Queue, MaxQueue))
	}
	if !(o.Rate > 0) || o.Rate > 1e7 {
		errs = append(errs, fmt.Errorf("rate %v must lie between 0 (excluded) and 10 million calls/s", o.Rate))
	}
	if o.Trigger.Duration <= 0 {
		errs = append(errs, errors.New("the trigger needs a duration"))
	}
	if o.Window <= 0 || o.TriggerAt < 2*o.Window {
		errs = append(errs, fmt.Errorf("the trigger at %v must come after two windows of %v: the normal state is measured before it", o.TriggerAt, o.Window))
	}
	if need := o.TriggerAt + o.Trigger.Duration + o.RecoverWithin + lifetime(p) + o.Window; o.Duration < need {
		errs = append(errs, fmt.Errorf("the duration %v is too short: the trigger at %v, its %v, the %v to recover, one window of %v and the longest call of %v need %v",
			o.Duration, o.TriggerAt, o.Trigger.Duration, o.RecoverWithin, o.Window, lifetime(p), need.Round(time.Millisecond)))
	}
	if p.Attempts < 1 || p.PerTryTimeout <= 0 {
		errs = append(errs, fmt.Errorf("the policy makes %d attempts of %v", p.Attempts, p.PerTryTimeout))
	}
	return errors.Join(errs...)
}

// lifetime is the longest a request can live: the deadline, or every
// attempt timing out with every wait at the cap.
func lifetime(p recommend.Policy) time.Duration {
	if p.Deadline > 0 {
		return p.Deadline + time.Millisecond
	}
	return time.Duration(p.Attempts)*p.PerTryTimeout + time.Duration(max(0, p.Attempts-1))*p.Backoff.Cap + time.Millisecond
}

// LoopSeries is the run in steps of Step: per second, the requests that
// arrived (demand), those that succeeded (goodput, by the time they did),
// the attempts sent to the dependency; and the longest queue of the step.
type LoopSeries struct {
	Step     time.Duration
	Demand   []float64
	Goodput  []float64
	Attempts []float64
	Queue    []int
}

// LoopResult is the closed loop's answer.
type LoopResult struct {
	Options LoopOptions
	// MeanService is the measured latency's mean, the service time; the
	// capacity is Workers / MeanService calls per second.
	MeanService       time.Duration
	CapacityPerSecond float64
	// Utilization is Rate / capacity: the load before the trigger.
	Utilization float64
	// BaselineSuccess and BaselineAttempts are the share of requests that
	// succeed and the attempts per request in the windows before the
	// trigger (the first one, from an empty queue, left out).
	BaselineSuccess, BaselineAttempts float64
	Recovered                         bool
	// Recovery is how long after the trigger's end the windows are back
	// to normal for good; < 0 when they are not.
	Recovery time.Duration
	// PeakLoadRatio is the most attempts per second of a step over the
	// capacity; FinalGoodputRatio the share of requests that succeeded in
	// the last window judged.
	PeakLoadRatio     float64
	FinalGoodputRatio float64
	// Ended is the simulated time the run ended at: Duration, or earlier
	// when the backlog alone proved it could not recover (Reason).
	Ended  time.Duration
	Reason string
	// Totals.
	Requests, Succeeded, Attempts int64
	// Wasted is attempts served after their caller gave up; Dropped
	// those a worker skipped because of that (DropExpired); Rejected those
	// refused by an outage or a full queue.
	Wasted, Dropped, Rejected int64
	PeakQueue                 int
	Series                    LoopSeries
}

// Event kinds of the loop.
const (
	evArrival uint8 = iota
	evTimeout       // an attempt's per-try timeout
	evFail          // an attempt refused: outage or full queue
	evRetry         // the backoff is over: the next attempt
	evDone          // a worker is done with an attempt
)

// An event's gen is its request's at the time: a request's gen changes
// with each attempt it sends and when it ends, so an event about an
// attempt that is no longer the one in flight is told apart (and ignored:
// timers are deleted lazily).
type event struct {
	at   int64
	req  int32
	gen  uint32
	kind uint8
	code uint8 // evFail: 0 refused (connect-failure), 1 a 503 from a full queue
}

// eventHeap is a binary min-heap by time; ties in the order pushed do not
// matter (times are nanoseconds drawn from continuous distributions) and
// the order is deterministic anyway.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].at <= e.at {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = e
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s = s[:n]
	*h = s
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1].at < s[c].at {
			c++
		}
		if last.at <= s[c].at {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = last
	return top
}

// queued is an attempt waiting for a worker (16 bytes).
type queued struct {
	expires int64 // when its caller stops waiting for it
	req     int32
	gen     uint32
}

// ring is the FIFO queue, grown by doubling.
type ring struct {
	buf        []queued
	head, size int
}

func (q *ring) push(e queued) {
	if q.size == len(q.buf) {
		nb := make([]queued, max(64, 2*len(q.buf)))
		for i := range q.size {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = e
	q.size++
}

func (q *ring) front() queued { return q.buf[q.head] }

func (q *ring) pop() queued {
	e := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return e
}

// request is a request in flight.
type request struct {
	start    int64
	prevWait time.Duration
	gen      uint32 // changes with each attempt sent and at the end
	cohort   int32  // the window it arrived in
	attempt  uint8  // attempts sent
	waiting  bool   // an attempt is in flight (not in a backoff)
}

// cohort is the requests that arrived in one window.
type cohort struct {
	index                 int64
	arrived, ok, attempts int64
}

type loop struct {
	o          LoopOptions
	p          recommend.Policy
	s          *histogram.Sampler
	r          *rand.Rand
	now        int64
	events     eventHeap
	queue      ring
	busy       int
	reqs       []request
	free       []int32
	tokens     float64
	retryFast  bool
	retry503   bool
	retryTmo   bool
	trigFrom   int64
	trigTo     int64
	window     int64
	cohorts    []cohort
	nextJudge  int64 // the next cohort to judge
	arrCohort  int64 // the cohort of the last arrival
	life       int64
	res        *LoopResult
	baseN      int64
	baseOK     int64
	baseAtt    int64
	lastBadEnd int64 // end of the last window after the trigger that was not normal
	judgedTo   int64 // end of the last window judged
	// The windows after the trigger from the first of RecoveryStreak
	// normal ones in a row on: how many in a row, and their sums.
	streak                int
	after, afterOK, aftAt int64
	step                  int64
	series                LoopSeries
	maxRate               float64
}

// RunLoop runs the closed loop of o through policy p with service times
// drawn from h. It stops with ctx's error once ctx is cancelled.
func RunLoop(ctx context.Context, h *histogram.Latency, p recommend.Policy, o LoopOptions) (LoopResult, error) {
	o = o.withDefaults()
	if err := o.Validate(p); err != nil {
		return LoopResult{}, fmt.Errorf("invalid closed loop: %w", err)
	}
	s := h.Sampler()
	if s == nil {
		return LoopResult{}, recommend.ErrNoSamples
	}
	mean := h.Mean()
	if mean <= 0 {
		mean = time.Microsecond
	}
	res := LoopResult{Options: o, MeanService: mean, Recovery: -1}
	res.CapacityPerSecond = float64(o.Workers) / mean.Seconds()
	res.Utilization = o.Rate / res.CapacityPerSecond
	l := &loop{o: o, p: p, s: s, r: rand.New(rand.NewPCG(o.Seed, o.Seed^0x6a09e667f3bcc909)), res: &res,
		tokens: MaxTokens, trigFrom: int64(o.TriggerAt), trigTo: int64(o.TriggerAt + o.Trigger.Duration),
		window: int64(o.Window), life: int64(lifetime(p)), maxRate: o.Rate}
	l.retryFast = p.RetriesOn(recommend.RetryConnectFailure)
	l.retry503 = p.RetriesOn("503")
	l.retryTmo = p.RetriesOn(recommend.RetryTimeout)
	if o.Trigger.Kind == TriggerSpike {
		l.maxRate = o.Rate * o.Trigger.Factor
	}
	l.cohorts = make([]cohort, l.life/l.window+3)
	for i := range l.cohorts {
		l.cohorts[i].index = -1
	}
	l.lastBadEnd = l.trigTo
	l.step = l.window
	if n := int64(o.Duration) / l.step; n > maxSeriesPoints {
		l.step = int64(time.Duration(math.Ceil(float64(o.Duration)/maxSeriesPoints/float64(time.Second))) * time.Second)
	}
	points := int((int64(o.Duration) + l.step - 1) / l.step)
	l.series = LoopSeries{Step: time.Duration(l.step), Demand: make([]float64, points), Goodput: make([]float64, points),
		Attempts: make([]float64, points), Queue: make([]int, points)}
	if err := l.run(ctx); err != nil {
		return LoopResult{}, err
	}
	l.finish()
	return res, nil
}

func (l *loop) triggered(kind string) bool {
	return l.o.Trigger.Kind == kind && l.now >= l.trigFrom && l.now < l.trigTo
}

func (l *loop) bin() int { return min(int(l.now/l.step), len(l.series.Demand)-1) }

func (l *loop) run(ctx context.Context) error {
	l.events.push(event{at: l.nextArrival(0), kind: evArrival})
	end := int64(l.o.Duration)
	recoverBy := l.trigTo + int64(l.o.RecoverWithin)
	capPerNs := l.res.CapacityPerSecond / 1e9
	for n := 0; len(l.events) > 0; n++ {
		e := l.events.pop()
		if e.at >= end {
			l.now = end
			break
		}
		l.now = e.at
		if n&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
			l.judge()
			// The backlog alone: even with no new call and every worker at
			// its normal speed, the queue takes longer to drain than the
			// time left to recover, plus a per-try timeout (every call
			// behind it times out). Dropped work costs nothing, so with
			// DropExpired the backlog proves nothing (and is bounded by
			// the attempts of one per-try timeout: expired ones go first).
			if !l.o.DropExpired && l.now < recoverBy {
				drain := float64(l.queue.size) / capPerNs
				if left := float64(recoverBy - l.now + int64(l.p.PerTryTimeout)); drain > left {
					l.res.Reason = fmt.Sprintf("stopped at %s: the queue holds %s attempts, %s of work at full capacity, more than the %s left to recover: the dependency cannot be back within %s",
						human.Seconds(float64(l.now)/1e9), human.Count(int64(l.queue.size)), human.Seconds(drain/1e9), human.Seconds(left/1e9), usage.RecoverWithin)
					l.res.Ended = time.Duration(l.now)
					return nil
				}
			}
		}
		if l.queue.size >= MaxQueue {
			l.res.Reason = fmt.Sprintf("stopped at %s: the queue reached %s attempts (the memory bound)", human.Seconds(float64(l.now)/1e9), human.Count(MaxQueue))
			l.res.Ended = time.Duration(l.now)
			return nil
		}
		switch e.kind {
		case evArrival:
			l.arrive()
			l.events.push(event{at: l.nextArrival(l.now), kind: evArrival})
		case evTimeout:
			if rq := l.current(e); rq != nil {
				l.failed(e.req, l.retryTmo)
			}
		case evFail:
			if rq := l.current(e); rq != nil {
				l.failed(e.req, (e.code == 0 && l.retryFast) || (e.code == 1 && l.retry503))
			}
		case evRetry:
			if rq := &l.reqs[e.req]; rq.gen == e.gen && !rq.waiting {
				l.send(e.req)
			}
		case evDone:
			if rq := l.current(e); rq != nil {
				l.succeed(e.req)
			} else {
				l.res.Wasted++
			}
			l.next()
		}
	}
	l.res.Ended = time.Duration(l.now)
	return nil
}

// nextArrival is the next arrival after t: Poisson at the largest rate,
// thinned to the rate of the moment (a spike's arrivals x Factor).
func (l *loop) nextArrival(t int64) int64 {
	for {
		t += int64(l.r.ExpFloat64() / l.maxRate * 1e9)
		if l.maxRate == l.o.Rate {
			return t
		}
		if t >= l.trigFrom && t < l.trigTo {
			return t
		}
		if l.r.Float64()*l.maxRate < l.o.Rate {
			return t
		}
	}
}

// current is the request of e when e is about its attempt in flight.
func (l *loop) current(e event) *request {
	rq := &l.reqs[e.req]
	if rq.gen != e.gen || !rq.waiting {
		return nil
	}
	return rq
}

func (l *loop) cohortOf(index int64) *cohort {
	c := &l.cohorts[index%int64(len(l.cohorts))]
	if c.index != index {
		*c = cohort{index: index}
	}
	return c
}

func (l *loop) arrive() {
	var id int32
	if n := len(l.free); n > 0 {
		id = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		l.reqs = append(l.reqs, request{})
		id = int32(len(l.reqs) - 1)
	}
	if k := l.now / l.window; k != l.arrCohort {
		l.arrCohort = k
		l.judge() // before its ring slot is taken again
	}
	rq := &l.reqs[id]
	*rq = request{start: l.now, gen: rq.gen, cohort: int32(l.now / l.window)}
	l.res.Requests++
	l.cohortOf(int64(rq.cohort)).arrived++
	l.series.Demand[l.bin()]++
	if l.p.RetryBudget > 0 {
		l.tokens = min(MaxTokens, l.tokens+l.p.RetryBudget)
	}
	l.send(id)
}

// send sends request id's next attempt.
func (l *loop) send(id int32) {
	rq := &l.reqs[id]
	rq.attempt++
	rq.gen++
	rq.waiting = true
	l.res.Attempts++
	l.cohortOf(int64(rq.cohort)).attempts++
	l.series.Attempts[l.bin()]++
	perTry := int64(l.p.PerTryTimeout)
	if l.p.Deadline > 0 {
		perTry = min(perTry, int64(l.p.Deadline)-(l.now-rq.start))
	}
	expires := l.now + perTry
	e := event{at: expires, req: id, gen: rq.gen, kind: evTimeout}
	l.events.push(e)
	fail := int64(l.o.FailLatency)
	switch {
	case l.triggered(TriggerOutage):
		l.res.Rejected++
		if fail < perTry {
			e.at, e.kind, e.code = l.now+fail, evFail, 0
			l.events.push(e)
		}
	case l.busy < l.o.Workers:
		l.busy++
		l.serve(queued{expires: expires, req: id, gen: rq.gen})
	case l.o.Queue > 0 && l.queue.size >= l.o.Queue:
		l.res.Rejected++
		if fail < perTry {
			e.at, e.kind, e.code = l.now+fail, evFail, 1
			l.events.push(e)
		}
	default:
		if l.o.DropExpired {
			l.dropExpired()
		}
		l.queue.push(queued{expires: expires, req: id, gen: rq.gen})
		if l.queue.size > l.res.PeakQueue {
			l.res.PeakQueue = l.queue.size
		}
		if b := l.bin(); l.queue.size > l.series.Queue[b] {
			l.series.Queue[b] = l.queue.size
		}
	}
}

// dropExpired drops the expired attempts at the queue's head: a worker
// would skip them at no cost when it reached them, so dropping them now
// changes nothing but the memory.
func (l *loop) dropExpired() {
	for l.queue.size > 0 && l.queue.front().expires <= l.now {
		l.queue.pop()
		l.res.Dropped++
	}
}

// serve gives a worker (already counted busy) the attempt q.
func (l *loop) serve(q queued) {
	d := float64(l.s.Sample(l.r))
	if l.triggered(TriggerSlow) {
		d *= l.o.Trigger.Factor
	}
	l.events.push(event{at: l.now + int64(d), req: q.req, gen: q.gen, kind: evDone})
}

// next gives the worker that just finished the queue's next attempt.
func (l *loop) next() {
	for l.queue.size > 0 {
		q := l.queue.pop()
		if l.o.DropExpired && q.expires <= l.now {
			l.res.Dropped++
			continue
		}
		l.serve(q)
		return
	}
	l.busy--
}

func (l *loop) succeed(id int32) {
	rq := &l.reqs[id]
	l.res.Succeeded++
	l.cohortOf(int64(rq.cohort)).ok++
	l.series.Goodput[l.bin()]++
	l.release(id)
}

// failed ends attempt of request id; retry says whether its failure is
// one the policy retries.
func (l *loop) failed(id int32, retry bool) {
	rq := &l.reqs[id]
	rq.waiting = false
	if !retry || int(rq.attempt) >= l.p.Attempts {
		l.release(id)
		return
	}
	wait := l.p.Backoff.Wait(l.r, int(rq.attempt)-1, rq.prevWait)
	rq.prevWait = wait
	if l.p.Deadline > 0 && l.p.Deadline-(time.Duration(l.now-rq.start)+wait) < l.p.MinUsefulTry {
		l.release(id)
		return
	}
	if l.p.RetryBudget > 0 {
		const slack = 1e-9 // as in replay
		if l.tokens < 1-slack {
			l.release(id)
			return
		}
		l.tokens--
	}
	l.events.push(event{at: l.now + int64(wait), req: id, gen: rq.gen, kind: evRetry})
}

func (l *loop) release(id int32) {
	rq := &l.reqs[id]
	rq.waiting = false
	rq.gen++
	l.free = append(l.free, id)
}

// judge judges the windows whose every request has ended: before the
// trigger they make the normal state, after it they are normal or not.
// At the end the windows still open are left unjudged.
func (l *loop) judge() {
	for {
		start, end := l.nextJudge*l.window, (l.nextJudge+1)*l.window
		if end+l.life > l.now || end > int64(l.o.Duration) {
			return
		}
		c := l.cohortOf(l.nextJudge)
		l.nextJudge++
		if c.arrived == 0 {
			continue
		}
		ok := float64(c.ok) / float64(c.arrived)
		switch {
		case end <= l.trigFrom:
			if start > 0 {
				l.baseN += c.arrived
				l.baseOK += c.ok
				l.baseAtt += c.attempts
			}
		case start >= l.trigTo:
			l.judgedTo = end
			l.res.FinalGoodputRatio = ok
			if l.baseN == 0 {
				continue
			}
			if l.streak < RecoveryStreak {
				if !l.normal(c.arrived, c.ok, c.attempts) {
					l.lastBadEnd, l.streak, l.after, l.afterOK, l.aftAt = end, 0, 0, 0, 0
					continue
				}
				l.streak++
			}
			l.after += c.arrived
			l.afterOK += c.ok
			l.aftAt += c.attempts
		}
	}
}

// normal says whether requests of which ok succeeded, with attempts in
// all, are as before the trigger.
func (l *loop) normal(requests, ok, attempts int64) bool {
	return float64(ok)/float64(requests) >= float64(l.baseOK)/float64(l.baseN)-GoodputTolerance &&
		float64(attempts)/float64(requests) <= float64(l.baseAtt)/float64(l.baseN)+AttemptsTolerance
}

func (l *loop) finish() {
	res := l.res
	l.judge()
	if l.baseN > 0 {
		res.BaselineSuccess = float64(l.baseOK) / float64(l.baseN)
		res.BaselineAttempts = float64(l.baseAtt) / float64(l.baseN)
	}
	ended := l.now
	if res.Reason != "" {
		// Stopped early by its backlog: the windows not judged are not
		// normal.
		l.lastBadEnd = max(l.lastBadEnd, ended)
	}
	recoverBy := l.trigTo + int64(l.o.RecoverWithin)
	switch {
	case res.Reason != "":
	case res.BaselineSuccess < 0.9:
		res.Reason = fmt.Sprintf("the dependency is not stable before the trigger: %s of requests succeed", human.Percent(res.BaselineSuccess))
	case l.judgedTo < recoverBy:
		res.Reason = "the run ended before the time to recover did" // Validate prevents it
	case l.streak < RecoveryStreak:
		res.Reason = fmt.Sprintf("no %d windows of %s in a row after the trigger were normal (success within %s of %s, attempts per request within %s of %s); the last one not normal ended at %s",
			RecoveryStreak, human.Seconds(l.o.Window.Seconds()), human.Percent(GoodputTolerance), human.Percent(res.BaselineSuccess),
			strconv.FormatFloat(AttemptsTolerance, 'g', -1, 64), strconv.FormatFloat(res.BaselineAttempts, 'f', 3, 64), human.Seconds(float64(l.lastBadEnd)/1e9))
	case !l.normal(l.after, l.afterOK, l.aftAt):
		res.Recovery = time.Duration(l.lastBadEnd - l.trigTo)
		res.Reason = fmt.Sprintf("back to normal %s after the trigger, but not for good: from then to the end %s of requests succeeded, with %s attempts each",
			human.Seconds(res.Recovery.Seconds()), human.Percent(float64(l.afterOK)/float64(l.after)), strconv.FormatFloat(float64(l.aftAt)/float64(l.after), 'f', 3, 64))
		res.Recovery = -1
	default:
		res.Recovery = time.Duration(l.lastBadEnd - l.trigTo)
		res.Recovered = res.Recovery <= l.o.RecoverWithin
		if !res.Recovered {
			res.Reason = fmt.Sprintf("back to normal only %s after the trigger, later than %s %s",
				human.Seconds(res.Recovery.Seconds()), usage.RecoverWithin, human.Seconds(l.o.RecoverWithin.Seconds()))
		}
	}
	// Per second, and the series cut at the end of the run.
	points := min(len(l.series.Demand), int((ended+l.step-1)/l.step))
	sec := float64(l.step) / 1e9
	for _, v := range [][]float64{l.series.Demand, l.series.Goodput, l.series.Attempts} {
		for i := range v {
			width := sec
			if last := int64(i+1) * l.step; last > ended {
				width = float64(ended-int64(i)*l.step) / 1e9
			}
			if width > 0 {
				v[i] /= width
			}
		}
	}
	l.series.Demand, l.series.Goodput, l.series.Attempts, l.series.Queue =
		l.series.Demand[:points], l.series.Goodput[:points], l.series.Attempts[:points], l.series.Queue[:points]
	for _, a := range l.series.Attempts {
		res.PeakLoadRatio = max(res.PeakLoadRatio, a/res.CapacityPerSecond)
	}
	res.Series = l.series
}
