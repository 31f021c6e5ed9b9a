// Package timeflag reads the times the command line takes (analyze's and
// summarize's --from and --to, prometheus's --at): one grammar, in Parse,
// for every flag that takes a time, and its description, Grammar, for
// their help.
package timeflag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Grammar describes what Parse reads, for the help of the flags.
const Grammar = "now, RFC 3339 (2026-11-02T10:00:00Z) or Unix seconds"

// Parse reads a time given on the command line:
//
//   - now: the time now is;
//   - an RFC 3339 time, fractional seconds optional: 2026-11-02T10:00:00Z,
//     2026-11-02T12:00:00.25+02:00;
//   - Unix seconds, with a sign, a fraction or an exponent: 1793613600,
//     1793613600.5, -86400, 1.7936136e9.
//
// Space around the value is ignored. "" is the zero time: the flag was not
// given (what it then means is the flag's to say).
func Parse(s string, now time.Time) (time.Time, error) {
	v := strings.TrimSpace(s)
	switch v {
	case "":
		return time.Time{}, nil
	case "now":
		return now, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	ok := err == nil
	if !ok {
		t, ok = unixSeconds(v)
	}
	if !ok {
		return time.Time{}, fmt.Errorf("%q is neither now, an RFC 3339 time (2026-11-02T10:00:00Z) nor Unix seconds", s)
	}
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("%q lies outside the years 1677 to 2262, the times Unix nanoseconds hold", s)
	}
	return t, nil
}

// The times a flag may give: those Unix nanoseconds in an int64 hold
// (1677 to 2262; records' times outside 1970 to 2262 are dropped).
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// unixSeconds reads v as Unix seconds: a decimal number exactly, to the
// nanosecond, and any other number strconv.ParseFloat reads (an exponent)
// as near as a float64 holds it.
func unixSeconds(v string) (time.Time, bool) {
	if t, ok := decimalSeconds(v); ok {
		return t, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) >= math.MaxInt64 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// decimalSeconds reads [+-]digits[.digits], digits beyond the nanosecond
// cut off.
func decimalSeconds(v string) (time.Time, bool) {
	neg := false
	if v != "" && (v[0] == '+' || v[0] == '-') {
		neg, v = v[0] == '-', v[1:]
	}
	whole, frac, _ := strings.Cut(v, ".")
	if whole == "" && frac == "" || !digits(whole) || !digits(frac) {
		return time.Time{}, false
	}
	var sec int64
	if whole != "" {
		var err error
		if sec, err = strconv.ParseInt(whole, 10, 64); err != nil {
			return time.Time{}, false
		}
	}
	frac = (frac + "000000000")[:9]
	nsec, _ := strconv.ParseInt(frac, 10, 64)
	if neg {
		sec, nsec = -sec, -nsec
	}
	return time.Unix(sec, nsec), true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
