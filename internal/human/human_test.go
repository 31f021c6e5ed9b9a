package human

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{850 * time.Microsecond, "850µs"},
		{20255 * time.Microsecond, "20.3ms"},
		{788479 * time.Microsecond, "788ms"},
		{800 * time.Millisecond, "800ms"},
		{999900 * time.Microsecond, "1s"},
		{1250 * time.Millisecond, "1.25s"},
		{125400 * time.Millisecond, "2m5s"},
		{time.Hour, "1h"},
		{-500 * time.Millisecond, "-500ms"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Duration(tt.in), "%v", tt.in)
	}
	assert.Equal(t, "792ms", Seconds(0.791551))
}

func TestPercent(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0 %"},
		{0.0525, "5.25 %"},
		{0.000655, "0.0655 %"},
		{0.001, "0.1 %"},
		{0.95, "95 %"},
		{0.000001, "< 0.001 %"}, // a non-zero share is never shown as 0
		{1, "100 %"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Percent(tt.in), "%v", tt.in)
	}
}

func TestCountAndNumber(t *testing.T) {
	assert.Equal(t, "0", Count(0))
	assert.Equal(t, "999", Count(999))
	assert.Equal(t, "1,000", Count(1000))
	assert.Equal(t, "200,000", Count(200000))
	assert.Equal(t, "-1,234,567", Count(-1234567))
	assert.Equal(t, "13", Number(12.8))
	assert.Equal(t, "6.1", Number(6.13))
	assert.Equal(t, "0.45", Number(0.45))
	assert.Equal(t, "1,000", Number(999.6))
}

func TestQuantile(t *testing.T) {
	for q, want := range map[float64]string{0.5: "p50", 0.9: "p90", 0.999: "p99.9", 1 - 0.0001: "p99.99", 0.995: "p99.5", 1: "max"} {
		assert.Equal(t, want, Quantile(q), "%v", q)
	}
}

// TestQuantileFromFalseTimeouts names quantiles computed the way recommend
// computes them, in float64 arithmetic (1 - 0.001 is not exactly 0.999).
func TestQuantileFromFalseTimeouts(t *testing.T) {
	for f, want := range map[float64]string{0.001: "p99.9", 0.003: "p99.7", 0.0001: "p99.99", 0.01: "p99", 0.05: "p95"} {
		assert.Equal(t, want, Quantile(1-f), "1 - %v", f)
	}
}

func TestCalls(t *testing.T) {
	assert.Equal(t, "0 calls", Calls(0))
	assert.Equal(t, "1 call", Calls(1))
	assert.Equal(t, "200,000 calls", Calls(200000))
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:             "0 bytes",
		1023:          "1023 bytes",
		1024:          "1 KiB",
		1536:          "1.5 KiB",
		1 << 20:       "1 MiB",
		4 << 20:       "4 MiB",
		256 << 20:     "256 MiB",
		1<<30 - 1:     "1023 MiB", // rounded down, never up to 1 GiB
		3 << 29:       "1.5 GiB",
		1<<40 + 1<<30: "1 TiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
