package recommend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Jitter names how a backoff wait is randomized (docs/method.md#backoff-with-jitter, after
// the AWS Architecture Blog's "Exponential Backoff And Jitter"). Without
// jitter, clients that failed together return together.
type Jitter string

const (
	// JitterFull waits uniform(0, min(cap, base x 2^n)) before retry n
	// (n = 0 for the first retry), as gRFC A6 specifies gRPC's retry
	// backoff; grpc-go (1.85, stream.go) draws within 20 % of the window
	// instead, as the gRPC snippet says.
	JitterFull Jitter = "full"
	// JitterEqual waits half of min(cap, base x 2^n) plus uniform over the
	// other half: never less than half the window.
	JitterEqual Jitter = "equal"
	// JitterDecorrelated waits min(cap, uniform(base, 3 x the previous
	// wait)), the first previous wait being base.
	JitterDecorrelated Jitter = "decorrelated"
)

// Jitters lists the known jitters, the default first.
var Jitters = []Jitter{JitterFull, JitterEqual, JitterDecorrelated}

// ParseJitter reads a jitter name; "" is full jitter.
func ParseJitter(s string) (Jitter, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return JitterFull, nil
	}
	for _, j := range Jitters {
		if s == string(j) {
			return j, nil
		}
	}
	names := make([]string, len(Jitters))
	for i, j := range Jitters {
		names[i] = string(j)
	}
	return "", fmt.Errorf("unknown jitter %q (known: %s)", s, strings.Join(names, ", "))
}

// Backoff is capped exponential backoff with jitter: the wait between two
// attempts of one request.
type Backoff struct {
	Jitter    Jitter
	Base, Cap time.Duration // Base > 0, Cap >= Base
}

// window is min(Cap, Base x 2^retry), the largest wait before retry number
// retry (0 for the first retry) under full and equal jitter.
func (b Backoff) window(retry int) time.Duration {
	w := b.Base
	for range retry {
		if w >= b.Cap || w > math.MaxInt64/2 {
			break
		}
		w *= 2
	}
	return min(w, b.Cap)
}

// Window is min(Cap, Base x 2^retry): the wait before retry number retry
// (0 for the first) of exponential backoff without jitter, and the largest
// under full and equal jitter.
func (b Backoff) Window(retry int) time.Duration { return b.window(retry) }

// uniform draws a duration uniformly from [0, d].
func uniform(r *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(d) + 1))
}

// Wait draws the wait before retry number retry (0 for the first retry,
// the one after the first attempt). prev is the previous wait drawn for the
// same request, used by decorrelated jitter only (0 before the first retry).
func (b Backoff) Wait(r *rand.Rand, retry int, prev time.Duration) time.Duration {
	switch b.Jitter {
	case JitterEqual:
		v := b.window(retry)
		return v/2 + uniform(r, v-v/2)
	case JitterDecorrelated:
		if prev < b.Base {
			prev = b.Base
		}
		hi := prev * 3
		if prev > math.MaxInt64/3 {
			hi = math.MaxInt64
		}
		return min(b.Cap, b.Base+uniform(r, hi-b.Base))
	default:
		return uniform(r, b.window(retry))
	}
}

// Totals returns the expected and the largest total wait over retries
// retries (the waits between retries+1 attempts). The largest total is what
// the schedule itself can draw: the sum of the windows for full and equal
// jitter, of min(cap, base x 3^k) for decorrelated jitter. It never exceeds
// retries x Cap, the bound a policy must fit whatever a client's schedule.
//
// For decorrelated jitter the expectation has no closed form (the cap cuts
// each wait's distribution, which depends on the previous one's); it is
// computed by carrying the wait's distribution on a grid of 2,048 cells
// between Base and Cap from one retry to the next, each step's mean in
// closed form over that grid, so it is exact to about 1/4,000 of Cap - Base (rounded to microseconds).
func (b Backoff) Totals(retries int) (expected, largest time.Duration) {
	if retries <= 0 {
		return 0, 0
	}
	e, l := b.Cumulative(retries)
	return e[retries-1], l[retries-1]
}

// Cumulative returns, for k from 1 to retries, the expected and the
// largest total of the first k waits (index k-1), as Totals(k) would: one
// pass for every prefix, where calling Totals for each would repeat the
// decorrelated grid's work.
func (b Backoff) Cumulative(retries int) (expected, largest []time.Duration) {
	if retries <= 0 {
		return nil, nil
	}
	if b.Jitter == JitterDecorrelated {
		return b.decorrelatedCumulative(retries)
	}
	expected, largest = make([]time.Duration, retries), make([]time.Duration, retries)
	var e float64
	var l time.Duration
	for n := range retries {
		v := b.window(n)
		l += v
		if b.Jitter == JitterEqual {
			e += 0.75 * float64(v)
		} else {
			e += 0.5 * float64(v)
		}
		expected[n], largest[n] = time.Duration(math.Round(e)), l
	}
	return expected, largest
}

func (b Backoff) decorrelatedCumulative(retries int) (expected, largest []time.Duration) {
	expected, largest = make([]time.Duration, retries), make([]time.Duration, retries)
	base, capf := float64(b.Base), float64(b.Cap)
	prevMax := base
	var l time.Duration
	for k := range retries {
		prevMax = min(capf, 3*prevMax)
		l += time.Duration(prevMax)
		largest[k] = l
	}
	if b.Cap <= b.Base {
		// Every draw from [base, 3 x prev] is at least base >= cap.
		for k := range retries {
			expected[k] = time.Duration(k+1) * b.Cap
			largest[k] = expected[k]
		}
		return expected, largest
	}

	// meanAfter is E[min(cap, uniform(base, 3w))] for a previous wait w.
	meanAfter := func(w float64) float64 {
		hi := 3 * w
		if hi <= capf {
			return (base + hi) / 2
		}
		return ((capf*capf-base*base)/2 + capf*(hi-capf)) / (hi - base)
	}

	const cells = 2048
	width := (capf - base) / cells
	// The wait's distribution: mass per cell (at the cell's centre) and an
	// atom at the cap. Before the first retry the "previous wait" is base.
	mass := make([]float64, cells)
	next := make([]float64, cells+1) // a difference array, then the masses
	atom := 0.0
	forEach := func(f func(w, m float64)) {
		for i, m := range mass {
			if m > 0 {
				f(base+(float64(i)+0.5)*width, m)
			}
		}
		if atom > 0 {
			f(capf, atom)
		}
	}
	var total float64
	first := true
	for k := range retries {
		clear(next)
		newAtom, mean := 0.0, 0.0
		spread := func(w, m float64) {
			mean += m * meanAfter(w)
			hi := 3 * w
			density := m / (hi - base)
			top := min(hi, capf)
			x := (top - base) / width
			j := min(int(x), cells)
			next[0] += density * width
			next[j] -= density * width
			if j < cells {
				// The partial cell at the top; next[j+1] undoes it below.
				next[j] += density * (x - float64(j)) * width
				next[j+1] -= density * (x - float64(j)) * width
			}
			if hi > capf {
				newAtom += m * (hi - capf) / (hi - base)
			}
		}
		if first {
			spread(base, 1)
			first = false
		} else {
			forEach(spread)
		}
		total += mean
		expected[k] = min(time.Duration(math.Round(total)).Round(time.Microsecond), largest[k])
		run := 0.0
		for i := range mass {
			run += next[i]
			mass[i] = max(run, 0)
		}
		atom = newAtom
	}
	return expected, largest
}
