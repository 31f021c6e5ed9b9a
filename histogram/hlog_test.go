package histogram

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
)

// fill records the same random calls into a plain set and, by interval,
// into a set that keeps cells, the way analysis files samples.
func fill(t *testing.T, plain, cells *Set, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	groups := []string{"GET /users/{id}", "POST /orders", "a,b%c#[x]"}
	for i := range n {
		name := groups[r.IntN(len(groups))]
		at := t0.Add(time.Duration(r.Int64N(int64(7 * time.Minute))))
		if i%97 == 0 {
			at = time.Time{} // no time
		}
		d := time.Duration(r.ExpFloat64() * float64(20*time.Millisecond))
		g := plain.Group(name)
		c := cells.Group(name).Cell(at)
		if !at.IsZero() {
			g.Arrivals.Add(at)
			c.Arrive(at.Unix(), 1)
		}
		if i%5 == 0 {
			g.RecordConnect(d / 10)
			c.RecordConnect(d / 10)
		}
		switch {
		case i%13 == 0:
			g.Excluded["5xx"]++
			c.Exclude("5xx")
		case i%29 == 0:
			g.Latency.RecordCensored(d + time.Second)
			c.RecordCensored(d + time.Second)
		case i%31 == 0:
			g.Latency.Record(-d)
			c.Record(-d)
		default:
			g.Latency.Record(d)
			c.Record(d)
		}
	}
}

// written fills a plain set and a set of one-minute cells with the same n
// calls (fill), and writes the cells as an interval log.
func written(t *testing.T, n int) (plain, cells *Set, log *bytes.Buffer) {
	t.Helper()
	plain, cells = NewSet(), NewSet()
	cells.Every(time.Minute)
	fill(t, plain, cells, n)
	log = &bytes.Buffer{}
	require.NoError(t, WriteLog(log, cells, map[string]int{"records": n}))
	return plain, cells, log
}

func TestLogRoundTrip(t *testing.T) {
	plain, _, buf := written(t, 20_000)
	text := buf.String()
	assert.True(t, strings.HasPrefix(text, logMarker), text[:80])
	assert.Contains(t, text, "Tag=a%2Cb%25c%23%5Bx%5D,")
	assert.Contains(t, text, "#[BaseTime: 0 (seconds since epoch)]")

	back := NewSet()
	lr := NewLogReader(buf, "x.hlog")
	var input json.RawMessage
	entries := 0
	for {
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if e.Input != nil {
			input = e.Input
			continue
		}
		entries++
		back.Group(e.Tag).AddCell(e.Cell)
	}
	assert.True(t, lr.Own())
	assert.Equal(t, time.Minute, lr.Interval(), "the interval the first line declares")
	assert.JSONEq(t, `{"records":20000}`, string(input))
	assert.Equal(t, 3*(7+1), entries, "3 groups x 7 minutes + the untimed cells")

	want, got := plain.Groups(), back.Groups()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		assert.Equal(t, w.Name, g.Name)
		assert.Equal(t, w.Latency.Count(), g.Latency.Count(), w.Name)
		assert.Equal(t, w.Latency.Censored(), g.Latency.Censored(), w.Name)
		wb, wa := w.Latency.OutOfRange()
		gb, ga := g.Latency.OutOfRange()
		assert.Equal(t, [2]int64{wb, wa}, [2]int64{gb, ga}, w.Name)
		assert.Positive(t, wb)
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
			assert.Equal(t, w.Latency.Quantile(q), g.Latency.Quantile(q), "%s q%v", w.Name, q)
			assert.Equal(t, w.Latency.QuantileIsLowerBound(q), g.Latency.QuantileIsLowerBound(q))
		}
		assert.Equal(t, w.Connect.Count(), g.Connect.Count())
		assert.Equal(t, w.Connect.Quantile(0.99), g.Connect.Quantile(0.99))
		assert.Equal(t, w.Excluded, g.Excluded)
		assert.Equal(t, w.Arrivals.Count(), g.Arrivals.Count())
		assert.Equal(t, w.Arrivals.Span(), g.Arrivals.Span())
		wm, wt := w.Arrivals.Busiest(time.Minute)
		gm, gt := g.Arrivals.Busiest(time.Minute)
		assert.Equal(t, wm, gm)
		assert.Equal(t, wt, gt)
		ws, _ := w.Arrivals.Busiest(time.Second)
		gs, _ := g.Arrivals.Busiest(time.Second)
		assert.Equal(t, ws, gs)
	}
}

// Cells filled apart (one set per host, one per core) merge to the cells
// of one set.
func TestCellsMerge(t *testing.T) {
	a, b, all := NewSet(), NewSet(), NewSet()
	for _, s := range []*Set{a, b, all} {
		s.Every(time.Minute)
	}
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * 250 * time.Millisecond)
		s := a
		if i%3 == 0 {
			s = b
		}
		for _, s := range []*Set{s, all} {
			c := s.Group("g").Cell(at)
			c.Record(time.Duration(i) * time.Millisecond)
			c.Arrive(at.Unix(), 1)
		}
	}
	a.Merge(b)
	ga, gall := a.Group("g"), all.Group("g")
	require.Equal(t, gall.CellStarts(), ga.CellStarts())
	for _, start := range gall.CellStarts() {
		c, m := gall.CellAt(start), ga.CellAt(start)
		require.NotNil(t, m, start)
		assert.Equal(t, c.Latency.TotalCount(), m.Latency.TotalCount())
		assert.Equal(t, c.Latency.ValueAtPercentile(99), m.Latency.ValueAtPercentile(99))
		assert.Equal(t, c.Seconds, m.Seconds)
		assert.Equal(t, c.Calls, m.Calls)
		assert.Zero(t, start%60, "intervals start on whole minutes")
	}
}

func TestEquivalentRange(t *testing.T) {
	for _, geo := range []struct {
		lowest, highest int64
		digits          int
	}{{1, highestMicros, 3}, {1000, 3_600_000_000_000, 2}, {1, 1 << 40, 5}, {64, 1 << 30, 1}} {
		h := hdr.New(geo.lowest, geo.highest, geo.digits)
		for _, v := range []int64{0, 1, 7, 2047, 2048, 2049, 4095, 100_000, 123_456_789, geo.highest / 3} {
			if v > geo.highest {
				continue
			}
			h.Reset()
			require.NoError(t, h.RecordValue(v))
			lo := h.ValueAtQuantile(0)
			hi := h.ValueAtQuantile(100)
			assert.Equal(t, hi-lo+1, equivalentRange(lo, geo.lowest, geo.digits), "%+v v=%d", geo, v)
		}
	}
}

func TestLogReaderErrors(t *testing.T) {
	good := func() string {
		s := NewSet()
		s.Every(time.Minute)
		c := s.Group("g").Cell(time.Unix(1_800_000_000, 0))
		c.Record(time.Millisecond)
		c.Arrive(1_800_000_000, 1)
		var b bytes.Buffer
		require.NoError(t, WriteLog(&b, s, nil))
		return b.String()
	}()
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	histLine := lines[len(lines)-1]
	for _, tc := range []struct {
		name, log string
		line      int
		want      string
	}{
		{"bad number", "1.0,x,2.0,HISTFAAAAB\n", 1, `"x" is not a number of seconds`},
		{"fields", "1.0,2.0,HISTFAAAAB\n", 1, "want start,length,max,histogram; got 3 fields"},
		{"payload", "#c\n1.0,2.0,3.0,HISTnotbase64!\n", 2, "is not a histogram"},
		{"tag only", "Tag=abc\n", 1, "Tag= with no interval"},
		{"cell mismatch", strings.Replace(good, `"start":1800000000`, `"start":1800000060`, 1), len(lines), "its cell line"},
		{"arrivals outside", strings.Replace(good, `"arrivals":[0,1]`, `"arrivals":[60,1]`, 1), len(lines) - 1, "is not a second of the interval"},
		{"bad cell json", strings.Replace(good, `{"tag"`, `{tag`, 1), len(lines) - 1, "cell line is not valid"},
		{"dangling cell", strings.TrimSuffix(good, histLine+"\n"), len(lines) - 1, "no histogram line after it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := NewLogReader(strings.NewReader(tc.log), "h.hlog")
			var err error
			for err == nil {
				_, err = lr.Next()
			}
			var pe *ingest.ParseError
			require.True(t, errors.As(err, &pe), "%v", err)
			assert.Equal(t, tc.line, pe.Line, "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "h.hlog:")
		})
	}
}

// Another reader of the format, hdrhistogram-go's own HistogramLogReader,
// reads what WriteLog writes: every histogram with its tag, times and
// counts, our comment lines skipped.
func TestLogReadByHdrHistogramGo(t *testing.T) {
	_, cells, buf := written(t, 5_000)

	type key struct {
		tag   string
		start int64
	}
	want := map[key]int64{}
	for _, g := range cells.Groups() {
		for _, start := range g.CellStarts() {
			c := g.CellAt(start)
			if start == Untimed {
				start = 0
			}
			want[key{escapeTag(g.Name), start * 1000}] = c.Latency.TotalCount()
		}
	}
	got := map[key]int64{}
	r := hdr.NewHistogramLogReader(buf)
	for {
		h, err := r.NextIntervalHistogram()
		require.NoError(t, err)
		if h == nil {
			break
		}
		k := key{h.Tag(), h.StartTimeMs()}
		_, dup := got[k]
		require.False(t, dup, "%v read twice", k)
		got[k] = h.TotalCount()
		if k.start != 0 {
			assert.Equal(t, k.start+60_000, h.EndTimeMs(), "the interval is a minute")
		}
		assert.Equal(t, int64(1), h.LowestTrackableValue())
		assert.Equal(t, int64(3), h.SignificantFigures())
	}
	assert.Equal(t, want, got)
	assert.Len(t, got, 3*8)
}

// hdrhistogram-go before v1.3.0 wrote "start,end" in milliseconds where
// "start,length" in seconds go (its issue #52), and "#[Basetime:".
func TestOldHdrHistogramGoLog(t *testing.T) {
	p := hdr.NewPacked(1, 3_600_000_000, 3)
	for v := range int64(1000) {
		require.NoError(t, p.RecordValue(1000+v*997))
	}
	text, err := p.Encode()
	require.NoError(t, err)
	log := "#[Histogram log format version 1.3]\n#[Basetime: 0 (seconds since epoch)]\n" +
		"Tag=a,1441812279474.000000,1441812280474.000000,0.997,HISTx\n" +
		"Tag=a,1441812280474.000000,1441812281475.000000,0.997,HISTx\n"
	log = strings.ReplaceAll(log, "HISTx", string(text))
	lr := NewLogReader(strings.NewReader(log), "old.hlog")
	var entries []LogEntry
	for {
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		entries = append(entries, e)
	}
	require.Len(t, entries, 2)
	assert.True(t, entries[0].OldGo)
	assert.False(t, entries[1].OldGo, "said once")
	assert.InDelta(t, 1441812279.474, entries[0].Start, 1e-6)
	assert.InDelta(t, 1.0, entries[0].Length, 1e-9)
	assert.InDelta(t, 1441812280.474, entries[1].Start, 1e-6)
	assert.InDelta(t, 1.001, entries[1].Length, 1e-9)
	assert.Equal(t, int64(1000), entries[0].Cell.Latency.TotalCount())

	// A log of seconds is left alone, and a lowercase Basetime is a base time.
	lr = NewLogReader(strings.NewReader(strings.ReplaceAll(
		"#[StartTime: 1441812279.474 (seconds since epoch)]\n#[Basetime: 1441812279.000 (seconds since epoch)]\n0.474,1.000,0.997,HISTx\n", "HISTx", string(text))), "new.hlog")
	e, err := lr.Next()
	require.NoError(t, err)
	assert.False(t, e.OldGo)
	assert.InDelta(t, 1441812279.474, e.Start, 1e-6)
	assert.InDelta(t, 1.0, e.Length, 1e-9)
}
