package mixture_test

import (
	"bytes"
	"encoding/csv"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/mixture"
)

var start = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func TestGenerateIsSeeded(t *testing.T) {
	m := mixture.Default()
	a, b := m.Generate(1, 1000), m.Generate(1, 1000)
	require.Len(t, a, 1000)
	assert.Equal(t, a, b, "same seed, same samples")
	c := m.Generate(2, 1000)
	assert.NotEqual(t, a, c)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	assert.Less(t, same, 10, "different seeds give unrelated samples")
	assert.Equal(t, a[:10], m.Generate(1, 10), "a prefix does not depend on n")
	for _, d := range a {
		assert.Zero(t, d%time.Microsecond, "samples are whole microseconds")
	}
}

// TestDefaultMatchesDomain checks the model against the worked example
// (docs/method.md#12-the-worked-example; 200,000 calls), within the tolerances below: p50 20 ms, p90 40 ms, p99 498 ms, p99.9 788 ms,
// max 857 ms; cut off at 50/250/500/800 ms: 5.25/1.74/0.99/0.07 %.
func TestDefaultMatchesDomain(t *testing.T) {
	const n = 200_000
	s := mixture.Default().Generate(1, n)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(math.Ceil(p*n-1e-9))-1] }
	above := func(d time.Duration) float64 {
		i, _ := slices.BinarySearch(s, d+1)
		return float64(n-i) / n
	}
	assert.InEpsilon(t, 20*time.Millisecond, q(0.5), 0.03)
	assert.InEpsilon(t, 40*time.Millisecond, q(0.9), 0.03)
	assert.InEpsilon(t, 498*time.Millisecond, q(0.99), 0.03)
	assert.InEpsilon(t, 788*time.Millisecond, q(0.999), 0.03)
	assert.InEpsilon(t, 857*time.Millisecond, q(1), 0.05)
	assert.InDelta(t, 0.0525, above(50*time.Millisecond), 0.002)
	assert.InDelta(t, 0.0174, above(250*time.Millisecond), 0.001)
	assert.InDelta(t, 0.0099, above(500*time.Millisecond), 0.001)
	assert.InDelta(t, 0.0007, above(800*time.Millisecond), 0.0003)
	assert.Zero(t, above(time.Second))
}

func TestWriteCSV(t *testing.T) {
	samples := mixture.Default().Generate(5, 20_000)
	var buf bytes.Buffer
	require.NoError(t, mixture.WriteCSV(&buf, samples, start, 400, 5))

	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"timestamp", "route", "status", "latency_ms"}, rows[0])
	rows = rows[1:]

	var good []time.Duration
	routes := map[string]int{}
	var errors int
	prev := start
	var last time.Time
	for i, r := range rows {
		ts, err := time.Parse(time.RFC3339, r[0])
		require.NoError(t, err, "row %d", i)
		require.Len(t, r[0], len("2006-01-02T15:04:05.000Z"), "row %d: RFC 3339 in UTC with milliseconds", i)
		require.False(t, ts.Before(prev), "row %d: timestamps do not go back", i)
		prev, last = ts, ts
		routes[r[1]]++
		ms, err := strconv.ParseFloat(r[3], 64)
		require.NoError(t, err)
		require.Regexp(t, `^\d+\.\d{3}$`, r[3])
		d := time.Duration(math.Round(ms*1000)) * time.Microsecond
		switch r[2] {
		case "200":
			good = append(good, d)
		case "500":
			errors++
			assert.Less(t, d, 5*time.Millisecond, "row %d: 500s are fast", i)
		default:
			t.Fatalf("row %d: status %q", i, r[2])
		}
	}
	assert.Equal(t, samples, good, "200 rows are exactly the samples, in order")
	assert.InDelta(t, 0.005, float64(errors)/float64(len(samples)), 0.002)
	assert.InDelta(t, 0.6, float64(routes["/api/users"])/float64(len(rows)), 0.02)
	assert.InDelta(t, 0.3, float64(routes["/api/orders"])/float64(len(rows)), 0.02)
	assert.InDelta(t, 0.1, float64(routes["/api/search"])/float64(len(rows)), 0.02)
	assert.Len(t, routes, 3)
	rate := float64(len(rows)) / last.Sub(start).Seconds()
	assert.InEpsilon(t, 400, rate, 0.03, "Poisson arrivals at 400/s")
}

func TestWriteCSVErrors(t *testing.T) {
	for _, rate := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		err := mixture.WriteCSV(&bytes.Buffer{}, []time.Duration{time.Millisecond}, start, rate, 1)
		assert.ErrorContains(t, err, "rate", "rate %v", rate)
	}
	err := mixture.WriteCSV(&bytes.Buffer{}, []time.Duration{-time.Millisecond}, start, 1, 1)
	assert.ErrorContains(t, err, "negative")
}

// TestCheckedInFile pins that testdata/mixture.csv is what the generator
// makes (see testdata/README.md); it fails if the generator or math/rand/v2's
// streams change.
func TestCheckedInFile(t *testing.T) {
	want, err := os.ReadFile("../../testdata/mixture.csv")
	if os.IsNotExist(err) {
		t.Skip("testdata/mixture.csv not present")
	}
	require.NoError(t, err)
	var got bytes.Buffer
	require.NoError(t, mixture.WriteCSV(&got, mixture.Default().Generate(1, 200_000), start, 400, 1))
	if !bytes.Equal(want, got.Bytes()) {
		t.Fatalf("testdata/mixture.csv differs from the generator's output (first lines %q); regenerate it as testdata/README.md says",
			strings.SplitN(got.String(), "\n", 3)[:2])
	}
}

func TestNginxLog(t *testing.T) {
	read := func(seed uint64) string {
		b, err := io.ReadAll(mixture.Default().NewNginxLog(seed, 1000, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), 400))
		require.NoError(t, err)
		return string(b)
	}
	a := read(1)
	assert.Equal(t, a, read(1), "the same seed gives the same bytes")
	assert.NotEqual(t, a, read(2))
	lines := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	require.Len(t, lines, 1000)
	assert.Regexp(t, `^10\.0\.\d+\.\d+ - - \[02/Nov/2026:10:00:0\d \+0000\] "GET /[a-z/?=]+\d* HTTP/1\.1" (200|500) \d+ "[^"]*" "[^"]+" \d+\.\d{3} \d+\.\d{3}$`, lines[0])
	var fast500 int
	for _, l := range lines {
		if strings.Contains(l, `" 500 `) {
			fast500++
		}
	}
	assert.InDelta(t, 5, fast500, 5, "about 0.5 %% fast 500s")
}
