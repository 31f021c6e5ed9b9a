package human

import (
	"math"
	"strings"
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
	assert.Equal(t, "1e+10s", Seconds(1e10), "beyond a time.Duration: no wrap-around")
	assert.Equal(t, "+Inf", Seconds(math.Inf(1)))
	assert.Equal(t, "NaN", Seconds(math.NaN()))
}

func TestExactDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		days bool
		want string
	}{
		{0, false, "0s"},
		{time.Minute, false, "1m"},
		{90 * time.Minute, false, "1h30m"},
		{25 * time.Millisecond, false, "25ms"},
		{30 * time.Second, false, "30s"},
		{1500 * time.Millisecond, false, "1s500ms"},
		{7 * 24 * time.Hour, false, "168h"},
		{7 * 24 * time.Hour, true, "7d"},
		{36 * time.Hour, true, "1d12h"},
		{time.Hour, true, "1h"},
		{-time.Minute, false, "-1m"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ExactDuration(tt.in, tt.days), "%v", tt.in)
		if !tt.days {
			d, err := time.ParseDuration(tt.want)
			assert.NoError(t, err)
			assert.Equal(t, tt.in, d, "reads back")
		}
	}
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

func TestNumberOf(t *testing.T) {
	assert.Equal(t, "1 call", NumberOf(1, "call"))
	assert.Equal(t, "1 call", NumberOf(1.0004, "call"), "written as 1, read as one")
	assert.Equal(t, "0.5 calls", NumberOf(0.5, "call"))
	assert.Equal(t, "0 calls", NumberOf(0, "call"))
	assert.Equal(t, "1.2 calls", NumberOf(1.2, "call"))
	assert.Equal(t, "1,200 calls", NumberOf(1200, "call"))
}

func TestCalls(t *testing.T) {
	assert.Equal(t, "0 calls", Calls(0))
	assert.Equal(t, "1 call", Calls(1))
	assert.Equal(t, "200,000 calls", Calls(200000))
}

// A size is written exactly, in the unit that reads best.
func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		256 << 20: "256 MiB",
		4 << 20:   "4 MiB",
		1e9:       "1 GB",
		1e12:      "1 TB",
		1 << 40:   "1 TiB",
		3 << 29:   "1536 MiB",
		1024000:   "1000 KiB",
		1000001:   "1000001 bytes",
		1<<30 - 1: "1073741823 bytes",
		1:         "1 byte",
		0:         "0 bytes",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"1048576", 1 << 20, ""},
		{"512MiB", 512 << 20, ""},
		{"512 mib", 512 << 20, ""},
		{"1GB", 1e9, ""},
		{"1.5GiB", 3 << 29, ""},
		{"64kB", 64000, ""},
		{"64KiB", 64 << 10, ""},
		{"2TiB", 2 << 40, ""},
		{"100B", 100, ""},
		{"0", 0, ""},
		{"512M", 0, `unknown unit "M"`},
		{"1.5", 0, "not a whole number of bytes"},
		{"-1MiB", 0, "is not a size"},
		{"MiB", 0, "is not a size"},
		{"", 0, "is not a size"},
		{"9000000TiB", 0, "too large"},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseBytes(%q): error %v, want one saying %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseBytes(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int64]string{0: "0 groups", 1: "1 group", 2: "2 groups", 1200: "1,200 groups", -1: "-1 groups"} {
		if got := Plural(n, "group"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
