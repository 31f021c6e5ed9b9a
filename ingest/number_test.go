package ingest

import (
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
