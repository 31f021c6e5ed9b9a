package ingest

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNumberGrammar: one grammar for every reader; Go's literal forms
// that strconv.ParseFloat reads ("1_000", "0x1p4") are not numbers.
func TestNumberGrammar(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		reason string
	}{
		{"12", 12 * time.Millisecond, ""},
		{"12.5", 12500 * time.Microsecond, ""},
		{".5", 500 * time.Microsecond, ""},
		{"5.", 5 * time.Millisecond, ""},
		{"+7", 7 * time.Millisecond, ""},
		{"1e3", time.Second, ""},
		{"1.5E-3", 1500 * time.Nanosecond, ""},
		{"2e+2", 200 * time.Millisecond, ""},
		{"1_000", 0, reasonNotNumber},
		{"1_0.5", 0, reasonNotNumber},
		{"0x1p4", 0, reasonNotNumber},
		{"0x10", 0, reasonNotNumber},
		{"0X1P-2", 0, reasonNotNumber},
		{"0b101", 0, reasonNotNumber},
		{"1,000", 0, reasonNotNumber},
		{" 12", 0, reasonNotNumber},
		{"12 ", 0, reasonNotNumber},
		{"1e", 0, reasonNotNumber},
		{"e3", 0, reasonNotNumber},
		{".", 0, reasonNotNumber},
		{"1.2.3", 0, reasonNotNumber},
		{"++1", 0, reasonNotNumber},
		{"inf", 0, reasonNotFinite},
		{"+Infinity", 0, reasonNotFinite},
		{"NaN", 0, reasonNotFinite},
		{"--inf", 0, reasonNotNumber},
		{"-5", 0, reasonNegative},
		{"1e400", 0, reasonRange},
	}
	for _, tt := range tests {
		got, reason := parseLatency(tt.in, time.Millisecond)
		assert.Equal(t, tt.reason, reason, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		assert.Equal(t, tt.reason != reasonNotNumber, isNumber(tt.in), "isNumber(%q)", tt.in)
	}
	for _, s := range []string{"0x5f5e100", "1_700_000_000"} {
		_, ok := parseTime(s)
		assert.False(t, ok, "parseTime(%q)", s)
	}
}

// FuzzNumberGrammar: floatSyntax accepts exactly the strings of the
// grammar written as a regular expression.
func FuzzNumberGrammar(f *testing.F) {
	grammar := regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	for _, s := range []string{"1", "1.", ".1", "1e5", "1_0", "0x1p4", "", "-", "+.e1", "1e+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := floatSyntax(s), grammar.MatchString(s); got != want {
			t.Fatalf("floatSyntax(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}

// scale's exact path for the units that are powers of ten gives what the
// division by 10^k with rounding gives.
func TestDecimalScaleExactUnits(t *testing.T) {
	ref := func(d decimal, unit time.Duration) (int64, bool) {
		hi, n := bits.Mul64(d.i, uint64(unit))
		if hi != 0 || n > math.MaxInt64 {
			return 0, false
		}
		if d.k > 0 && d.f > 0 {
			p := pow10[d.k]
			fh, fl := bits.Mul64(d.f, uint64(unit))
			q, r := bits.Div64(fh, fl, p)
			if r >= p-r {
				q++
			}
			if n += q; n > math.MaxInt64 {
				return 0, false
			}
		}
		return int64(n), true
	}
	r := rand.New(rand.NewPCG(13, 14))
	units := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, 100 * time.Microsecond}
	for range 100000 {
		k := r.IntN(maxFracDigits + 1)
		d := decimal{i: r.Uint64N(1 << uint(r.IntN(64))), k: k, f: r.Uint64N(pow10[k])}
		for _, u := range units {
			gn, gok := d.scale(u)
			wn, wok := ref(d, u)
			if gn != wn || gok != wok {
				t.Fatalf("%+v x %v: %d %v, want %d %v", d, u, gn, gok, wn, wok)
			}
		}
	}
}

// plainLatency answers as parseDecimal and scale do whenever it answers.
func TestPlainLatencyAgrees(t *testing.T) {
	ref := func(s string, unit time.Duration) (time.Duration, bool) {
		d, ok := parseDecimal(s)
		if !ok || d.neg && !d.isZero() {
			return 0, false
		}
		n, ok := d.scale(unit)
		return time.Duration(n), ok
	}
	r := rand.New(rand.NewPCG(15, 16))
	units := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute}
	alphabet := "0123456789.0123456789-+e"
	cases := []string{"", "0", "0.", ".5", "12.", "007", "0.054", "31.466", "9223372036.854775807", "9223372036.854775808",
		"999999999999999999", "1e3", "-0", "+1", "1.0000000000", "0.1234567891"}
	for range 200000 {
		b := make([]byte, r.IntN(21))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		for _, u := range units {
			got, ok := plainLatency(s, u)
			if !ok {
				continue
			}
			if want, wok := ref(s, u); !wok || got != want {
				t.Fatalf("plainLatency(%q, %v) = %v, want %v (%v)", s, u, got, want, wok)
			}
		}
	}
}
