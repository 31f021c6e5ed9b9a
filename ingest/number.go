package ingest

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// ParseUnit parses the name of a latency unit: "ns", "us" (or "µs"), "ms",
// "s", their long forms ("nanoseconds", "micros", "millis", "seconds", ...),
// or a positive Go duration such as "100us" for inputs in odd units.
func ParseUnit(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if u, ok := unitNames[t]; ok {
		return u, nil
	}
	if d, err := time.ParseDuration(t); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("unknown unit %q: want ns, us, ms or s", s)
}

var unitNames = map[string]time.Duration{
	"ns": time.Nanosecond, "nanos": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
}

// Reasons a value is rejected, shared by decoders so that reports group them.
const (
	reasonEmpty     = "is empty"
	reasonNotNumber = "is not a number"
	reasonNotFinite = "is not a finite number"
	reasonNegative  = "is negative"
	reasonRange     = "is out of range"
	reasonTime      = "is not a timestamp (RFC 3339, Unix seconds or milliseconds)"
	reasonStatus    = "is not a status code"
)

// decimal is a non-negative number [+-]ddd[.fff] read exactly: the integer
// part, then the first k digits of the fraction as an integer.
type decimal struct {
	neg  bool
	i, f uint64
	k    int
}

// maxFracDigits is how many fraction digits a decimal keeps; more digits
// cannot change a value in nanoseconds by more than rounding.
const maxFracDigits = 19

var pow10 = func() (p [maxFracDigits + 1]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// parseDecimal reads s when it is a plain decimal: an optional sign, digits,
// an optional point and fraction digits, at least one digit in all. It
// reports false for anything else (exponents, NaN, an integer part that does
// not fit in 64 bits), which callers hand to strconv.ParseFloat.
func parseDecimal(s string) (d decimal, ok bool) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	digits := 0
	i := 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		hi, lo := bits.Mul64(d.i, 10)
		lo, carry := bits.Add64(lo, uint64(s[i]-'0'), 0)
		if hi != 0 || carry != 0 {
			return d, false
		}
		d.i = lo
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if d.k < maxFracDigits {
				d.f = d.f*10 + uint64(s[i]-'0')
				d.k++
			}
			digits++
		}
	}
	return d, digits > 0 && i == len(s)
}

// scale returns d x unit in nanoseconds rounded to the nearest one, and
// false when that does not fit in an int64. unit must be positive.
func (d decimal) scale(unit time.Duration) (int64, bool) {
	hi, n := bits.Mul64(d.i, uint64(unit))
	if hi != 0 || n > math.MaxInt64 {
		return 0, false
	}
	if d.k > 0 && d.f > 0 {
		var q uint64
		if u := unitDigits(unit); u >= d.k {
			// unit is 10^u ns: d.f x unit / 10^k is d.f x 10^(u-k),
			// exactly, and below unit. No division.
			q = d.f * pow10[u-d.k]
		} else {
			p := pow10[d.k]
			// d.f < p and unit < 2^63, so the high word is below p: no panic.
			fh, fl := bits.Mul64(d.f, uint64(unit))
			var r uint64
			q, r = bits.Div64(fh, fl, p)
			if r >= p-r {
				q++
			}
		}
		n += q
		if n > math.MaxInt64 {
			return 0, false
		}
	}
	return int64(n), true
}

// unitDigits returns u when unit is 10^u ns (ns, µs, ms, s), else -1.
func unitDigits(unit time.Duration) int {
	switch unit {
	case time.Nanosecond:
		return 0
	case time.Microsecond:
		return 3
	case time.Millisecond:
		return 6
	case time.Second:
		return 9
	}
	return -1
}

func (d decimal) isZero() bool { return d.i == 0 && d.f == 0 }

// The number grammar of every reader (CSV cells, log fields, JSON values
// given as strings, Unix timestamps):
//
//	number   = [ "+" | "-" ] ( digits [ "." [ digits ] ] | "." digits ) [ exponent ]
//	exponent = ( "e" | "E" ) [ "+" | "-" ] digits
//	digits   = "0" ... "9" { "0" ... "9" }
//
// Nothing else is a number: no digit separators ("1_000", "1,000"), no
// hexadecimal ("0x10", "0x1p4"), no spaces. "inf", "infinity" and "nan"
// (any case, signed) are told apart as "not a finite number".

// floatSyntax reports whether s follows the number grammar. It is checked
// before strconv.ParseFloat, which also reads Go's literals ("1_000",
// "0x1p4").
func floatSyntax(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// notFinite reports whether s names an infinity or NaN as strconv reads them.
func notFinite(s string) bool {
	t := strings.ToLower(strings.TrimLeft(s, "+-"))
	return len(s)-len(t) <= 1 && (t == "inf" || t == "infinity" || t == "nan")
}

// parseFloat is strconv.ParseFloat within the number grammar; infinities
// and NaN come back as such, for the caller to refuse by name.
func parseFloat(s string) (float64, error) {
	if !floatSyntax(s) && !notFinite(s) {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// parseLatency reads a non-negative number of units as a duration. On
// failure it returns one of the reason constants.
func parseLatency(s string, unit time.Duration) (time.Duration, string) {
	if d, ok := plainLatency(s, unit); ok {
		return d, ""
	}
	if s == "" {
		return 0, reasonEmpty
	}
	if d, ok := parseDecimal(s); ok {
		if d.neg && !d.isZero() {
			return 0, reasonNegative
		}
		n, ok := d.scale(unit)
		if !ok {
			return 0, reasonRange
		}
		return time.Duration(n), ""
	}
	v, err := parseFloat(s)
	switch {
	case isRangeErr(err): // beyond float64, e.g. 1e400
		return 0, reasonRange
	case err != nil:
		return 0, reasonNotNumber
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, reasonNotFinite
	case v < 0:
		return 0, reasonNegative
	}
	ns := math.Round(v * float64(unit))
	if ns >= 1<<63 {
		return 0, reasonRange
	}
	return time.Duration(ns), ""
}

// plainLatency reads the common case of parseLatency, digits with an
// optional point and at most u fraction digits in a unit of 10^u ns, the
// value parseDecimal and scale give, with less work; false leaves s to them.
// It reads bytes too, so that a decoder need not copy a field to a string
// first.
func plainLatency[T string | []byte](s T, unit time.Duration) (time.Duration, bool) {
	u := unitDigits(unit)
	if u < 0 || len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n, f uint64 // below 10^18: no overflow
	i := 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		n = n*10 + uint64(s[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	k := 0
	if i < len(s) {
		if s[i] != '.' {
			return 0, false
		}
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			f = f*10 + uint64(s[i]-'0')
			k++
		}
		if i != len(s) || k > u {
			return 0, false
		}
	}
	p := pow10[u]
	if n > math.MaxInt64/p {
		return 0, false
	}
	v := n*p + f*pow10[u-k] // f x 10^(u-k) < p: no overflow of uint64
	if v > math.MaxInt64 {
		return 0, false
	}
	return time.Duration(v), true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// isNumber reports whether s reads as a number, for header detection.
func isNumber(s string) bool {
	if _, ok := parseDecimal(s); ok {
		return true
	}
	_, err := parseFloat(s)
	return err == nil || isRangeErr(err)
}

// unixMillisFrom is the magnitude from which a Unix timestamp is read as
// milliseconds rather than seconds: 1e11 seconds is the year 5138, 1e11
// milliseconds is March 1973.
const unixMillisFrom = 1e11

// parseTime reads an RFC 3339 timestamp (fractional seconds optional; a space
// instead of the "T" is accepted, as RFC 3339 allows) or a Unix time in
// seconds or milliseconds told apart by magnitude. Unix times must be
// non-negative and before the year 2262 (time.Duration's range).
func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if d, ok := parseDecimal(s); ok {
		return unixTime(d)
	}
	if c := s[0]; c >= '0' && c <= '9' && strings.IndexByte(s, ':') >= 0 {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, true
		}
		if len(s) > 10 && s[10] == ' ' {
			if t, err := time.Parse(time.RFC3339Nano, s[:10]+"T"+s[11:]); err == nil {
				return t, true
			}
		}
		return time.Time{}, false
	}
	v, err := parseFloat(s)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return time.Time{}, false
	}
	unit := float64(time.Second)
	if v >= unixMillisFrom {
		unit = float64(time.Millisecond)
	}
	ns := math.Round(v * unit)
	if ns >= 1<<63 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(ns)).UTC(), true
}

// parseStatus reads a status code 0-999; "" and "-" (unset) read as 0.
func parseStatus(s string) (int, bool) {
	if s == "" || s == "-" {
		return 0, true
	}
	if len(s) > 3 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// lastSecond is parseTime with a memory of the last second it read from an
// RFC 3339 timestamp: consecutive rows of a log mostly share it, and a
// timestamp with the same date, time of day (to the second) and zone as
// the remembered one is read without time.Parse, only its fraction parsed.
// The answers are parseTime's.
type lastSecond struct {
	prefix [19]byte // "2024-10-27T03:33:20" (or with a space for the T)
	zone   [6]byte  // "Z" or "+02:00"
	zoneN  int
	sec    time.Time // the second, its fraction cut
	valid  bool
}

func (c *lastSecond) parse(s string) (time.Time, bool) {
	if c.valid && len(s) > 19 && s[:19] == string(c.prefix[:]) {
		if frac, n, ok := fraction(s[19:]); ok && s[19+n:] == string(c.zone[:c.zoneN]) {
			return c.sec.Add(frac), true
		}
	}
	t, ok := parseTime(s)
	if !ok || len(s) <= 19 || !rfc3339Second(s[:19]) {
		return t, ok // not a timestamp the cache can answer for
	}
	_, n, fok := fraction(s[19:])
	if zone := s[19+n:]; fok && rfc3339Zone(zone) {
		copy(c.prefix[:], s)
		c.zoneN = copy(c.zone[:], zone)
		c.sec = t.Add(-time.Duration(t.Nanosecond()))
		c.valid = true
	}
	return t, ok
}

// rfc3339Second reports whether s is "YYYY-MM-DDTHH:MM:SS" (or with a space
// for the T) with every digit in its place, the only form the cache
// remembers: time.Parse also reads "3:04:05" for "03:04:05", where the
// fraction and zone would not follow at a fixed offset.
func rfc3339Second(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != 'T' && c != ' ' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return len(s) == 19
}

// rfc3339Zone reports whether s is an RFC 3339 zone: "Z" or "+hh:mm".
func rfc3339Zone(s string) bool {
	switch len(s) {
	case 1:
		return s[0] == 'Z' || s[0] == 'z'
	case 6:
		return (s[0] == '+' || s[0] == '-') && s[3] == ':' && rfc3339Second("0000-00-00T00:"+s[1:3]+":"+s[4:6])
	}
	return false
}

// fraction reads the fraction of a second at the start of s: nothing, or
// "." and one to nine digits. It returns the fraction and its length.
func fraction(s string) (time.Duration, int, bool) {
	if s == "" || s[0] != '.' {
		return 0, 0, true
	}
	var ns time.Duration
	i := 1
	for ; i < len(s) && i <= 9 && '0' <= s[i] && s[i] <= '9'; i++ {
		ns = ns*10 + time.Duration(s[i]-'0')
	}
	if i == 1 || (i < len(s) && '0' <= s[i] && s[i] <= '9') {
		return 0, 0, false // no digit, or more than nine
	}
	for k := i; k <= 9; k++ {
		ns *= 10
	}
	return ns, i, true
}

// unixTime reads a Unix timestamp in seconds, or in milliseconds when it is
// large enough to be one (unixMillisFrom); negative times are refused.
func unixTime(d decimal) (time.Time, bool) {
	if d.neg && !d.isZero() {
		return time.Time{}, false
	}
	unit := time.Second
	if d.i >= unixMillisFrom {
		unit = time.Millisecond
	}
	ns, ok := d.scale(unit)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, ns).UTC(), true
}
