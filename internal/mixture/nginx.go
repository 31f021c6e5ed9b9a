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
//	10.0.3.7 - - [02/Nov/2026:10:00:00 +0000] "GET /api/users/4821 HTTP/1.1" 200 512 "-" "curl/8.5.0" 0.021 0.020
//
// Latencies come from the model (request time; the upstream's is 0-1 ms
// less), routes carry numeric ids so that grouping by route has work to
// do, about 0.5 % of the calls are fast 500s, and calls arrive as a Poisson
// process at rate per second. Referers and user agents are those of an
// API that browsers and scripts call, so that lines are as long as real
// ones: about 150 bytes, 300 MB for 2,000,000 lines. Lines are made as they are read: a log of any
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

// nginxAgents are user agents with the share of calls that send them.
var nginxAgents = []struct {
	agent string
	share float64
}{
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36", 0.25},
	{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1", 0.1},
	{"okhttp/4.12.0", 0.2},
	{"Go-http-client/1.1", 0.2},
	{"python-requests/2.32.3", 0.15},
	{"curl/8.5.0", 0.1},
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
	agent := nginxAgents[len(nginxAgents)-1].agent
	u = r.Float64()
	for _, a := range nginxAgents {
		if u < a.share {
			agent = a.agent
			break
		}
		u -= a.share
	}
	if agent[0] == 'M' { // a browser: the page that called the API
		b = append(b, ` "https://shop.example.com/"`...)
	} else {
		b = append(b, ` "-"`...)
	}
	b = append(b, ` "`...)
	b = append(b, agent...)
	b = append(b, `" `...)
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
