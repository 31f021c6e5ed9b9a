package mixture

import (
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// NginxLog is a reader of a generated nginx access log in the combined
// format plus " $request_time $upstream_response_time":
//
//	10.0.3.7 - - [02/Nov/2026:10:00:00 +0000] "GET /api/users/4821 HTTP/1.1" 200 512 "-" "bench/1.0" 0.021 0.020
//
// Latencies come from the model (request time; the upstream's is 0-1 ms
// less), routes carry numeric ids so that grouping by route has work to
// do, about 0.5 % of the calls are fast 500s, and calls arrive as a Poisson
// process at rate per second. Lines are made as they are read: a log of any
// length costs no memory, which is what the memory and speed benchmarks
// need. The same seed gives the same bytes.
type NginxLog struct {
	m       Model
	r       *rand.Rand
	left    int
	rate    float64
	start   time.Time
	elapsed float64
	buf     []byte
	pending []byte
}

// NewNginxLog returns a reader of n lines.
func (m Model) NewNginxLog(seed uint64, n int, start time.Time, rate float64) *NginxLog {
	return &NginxLog{m: m, r: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), left: n, rate: rate, start: start}
}

var nginxPaths = []struct {
	prefix string
	id     bool
	share  float64
}{
	{"/api/users/", true, 0.5},
	{"/api/orders/", true, 0.3},
	{"/api/search?q=", true, 0.15},
	{"/healthz", false, 0.05},
}

// Read implements io.Reader.
func (l *NginxLog) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(l.pending) == 0 {
			if l.left == 0 {
				break
			}
			l.left--
			l.pending = l.line()
		}
		c := copy(p[n:], l.pending)
		n += c
		l.pending = l.pending[c:]
	}
	if n == 0 && l.left == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// line makes the next line in l.buf.
func (l *NginxLog) line() []byte {
	r := l.r
	l.elapsed += r.ExpFloat64() / l.rate
	t := l.start.Add(time.Duration(l.elapsed * float64(time.Second))).UTC()
	v := float64(l.m.Median) * math.Exp(l.m.Sigma*r.NormFloat64())
	if r.Float64() < l.m.PauseShare {
		v += float64(l.m.PauseMin) + r.Float64()*float64(l.m.PauseMax-l.m.PauseMin)
	}
	d := time.Duration(v)
	status := 200
	if r.Float64() < errShare {
		status, d = 500, errMin+time.Duration(r.Float64()*float64(errMax-errMin))
	}
	upstream := max(d-time.Duration(r.Float64()*float64(time.Millisecond)), 0)

	b := l.buf[:0]
	b = append(b, "10.0."...)
	b = strconv.AppendInt(b, int64(r.IntN(8)), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(1+r.IntN(250)), 10)
	b = append(b, " - - ["...)
	b = t.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, `] "GET `...)
	u := r.Float64()
	for i, p := range nginxPaths {
		if u < p.share || i == len(nginxPaths)-1 {
			b = append(b, p.prefix...)
			if p.id {
				b = strconv.AppendInt(b, int64(r.IntN(100_000)), 10)
			}
			break
		}
		u -= p.share
	}
	b = append(b, ` HTTP/1.1" `...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(200+r.IntN(2000)), 10)
	b = append(b, ` "-" "bench/1.0" `...)
	b = appendSeconds(b, d)
	b = append(b, ' ')
	b = appendSeconds(b, upstream)
	b = append(b, '\n')
	l.buf = b
	return b
}

// appendSeconds writes d in seconds with nginx's millisecond resolution.
func appendSeconds(b []byte, d time.Duration) []byte {
	ms := d.Milliseconds()
	b = strconv.AppendInt(b, ms/1000, 10)
	frac := ms % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}
