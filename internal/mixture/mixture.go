// Package mixture generates synthetic latency samples from the mixture model
// of docs/method.md#12-the-worked-example: a lognormal body (most calls about 20 ms) plus, for a
// small share of calls, an extra uniform pause (a GC pause, a lock, a
// retransmission). Tests and testdata/gen use it; output is reproducible from
// the seed.
package mixture

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Model is a latency distribution: a lognormal with the given median and
// sigma (of the underlying normal), plus with probability PauseShare an extra
// pause drawn uniformly from [PauseMin, PauseMax).
type Model struct {
	Median             time.Duration
	Sigma              float64
	PauseShare         float64
	PauseMin, PauseMax time.Duration
}

// Default returns the model of the worked example
// (docs/method.md#12-the-worked-example): median 20 ms,
// sigma 0.5, and 2 % of calls with an extra pause of 150-800 ms.
func Default() Model {
	return Model{
		Median:     20 * time.Millisecond,
		Sigma:      0.5,
		PauseShare: 0.02,
		PauseMin:   150 * time.Millisecond,
		PauseMax:   800 * time.Millisecond,
	}
}

// Generate returns n samples drawn from m with a PCG generator seeded with
// (seed, seed): the same seed gives the same samples. Samples are rounded to
// whole microseconds, so WriteCSV's latency_ms (3 decimals) holds them
// exactly.
func (m Model) Generate(seed uint64, n int) []time.Duration {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]time.Duration, n)
	for i := range out {
		v := float64(m.Median) * math.Exp(m.Sigma*r.NormFloat64())
		if r.Float64() < m.PauseShare {
			v += float64(m.PauseMin) + r.Float64()*float64(m.PauseMax-m.PauseMin)
		}
		out[i] = time.Duration(v).Round(time.Microsecond)
	}
	return out
}

// Routes and their shares of the rows WriteCSV writes.
var routes = []struct {
	name  string
	share float64
}{
	{"/api/users", 0.6},
	{"/api/orders", 0.3},
	{"/api/search", 0.1},
}

const (
	// errShare is the share of extra fast 500 rows, relative to the samples.
	errShare = 0.005
	// errMin and errMax bound the latency of a fast 500.
	errMin = 1 * time.Millisecond
	errMax = 4 * time.Millisecond
)

// WriteCSV writes samples as an access log in CSV with the header
// timestamp,route,status,latency_ms. Calls arrive as a Poisson process at
// rate calls per second from start (timestamps RFC 3339 in UTC with
// milliseconds); routes are /api/users (60 %), /api/orders (30 %) and
// /api/search (10 %). Every sample is written once, in order, as a 200 row
// with latency_ms to 3 decimals; in addition about 0.5 % extra rows are fast
// 500s (1-4 ms) that are not samples of the model. Arrivals, routes and the
// 500s are drawn from a generator seeded with seed, independent of
// Generate's stream for the same seed.
func WriteCSV(w io.Writer, samples []time.Duration, start time.Time, rate float64, seed uint64) error {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return fmt.Errorf("mixture: rate %v calls/s: must be positive and finite", rate)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	bw := bufio.NewWriter(w)
	bw.WriteString("timestamp,route,status,latency_ms\n")

	elapsed := 0.0 // seconds since start
	var line []byte
	row := func(status int, d time.Duration) error {
		elapsed += r.ExpFloat64() / rate
		t := start.Add(time.Duration(elapsed * float64(time.Second))).UTC()
		u := r.Float64()
		route := routes[len(routes)-1].name
		for _, rt := range routes {
			if u < rt.share {
				route = rt.name
				break
			}
			u -= rt.share
		}
		us := d.Round(time.Microsecond).Microseconds()
		line = t.AppendFormat(line[:0], "2006-01-02T15:04:05.000Z07:00")
		line = append(line, ',')
		line = append(line, route...)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(status), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, us/1000, 10)
		line = append(line, '.')
		frac := us % 1000
		line = append(line, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		line = append(line, '\n')
		_, err := bw.Write(line)
		return err
	}
	for _, d := range samples {
		if d < 0 {
			return fmt.Errorf("mixture: negative sample %v", d)
		}
		if r.Float64() < errShare {
			fast := errMin + time.Duration(r.Float64()*float64(errMax-errMin))
			if err := row(500, fast); err != nil {
				return err
			}
		}
		if err := row(200, d); err != nil {
			return err
		}
	}
	return bw.Flush()
}
