// Package human formats numbers the way people write them in reports and
// reasons: durations to three significant digits, shares as percentages,
// counts with thousands separators. Every package that writes for people
// uses it, so the same value reads the same everywhere.
package human

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration shows d to three significant digits as a Go duration, so it can
// be pasted into a flag: 788.479ms -> "788ms", 20.255ms -> "20.3ms",
// 125.4s -> "2m5s".
func Duration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	if d > 0 {
		p := int64(1)
		for p <= int64(d)/10 {
			p *= 10
		}
		if unit := p / 100; unit > 1 {
			d = time.Duration((int64(d) + unit/2) / unit * unit)
		}
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if neg {
		return "-" + s
	}
	return s
}

// ExactDuration writes d exactly, without the zero units Go's
// time.Duration.String leaves in: 1m0s -> "1m", 1h30m0s -> "1h30m", so that
// a default in --help reads as people write it and can be pasted back.
// With days, whole days are written as days, the way Prometheus durations
// are (168h -> "7d", 36h -> "1d12h"); without, in hours, which Go's
// time.ParseDuration reads ("168h").
func ExactDuration(d time.Duration, days bool) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	var b strings.Builder
	b.WriteString(sign)
	const day = 24 * time.Hour
	if days && d >= day {
		fmt.Fprintf(&b, "%dd", d/day)
		d %= day
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"µs", time.Microsecond}, {"ns", time.Nanosecond}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// Seconds shows a duration given in seconds like Duration. Beyond what a
// time.Duration holds (about 292 years) it writes the seconds in
// scientific notation, "1e+10s", rather than a wrapped-around duration;
// NaN and infinities are "NaN", "+Inf" and "-Inf".
func Seconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "NaN"
	case math.IsInf(s, 0):
		return strconv.FormatFloat(s, 'g', -1, 64)
	case math.Abs(s) >= math.MaxInt64/1e9:
		return strconv.FormatFloat(s, 'g', 3, 64) + "s"
	}
	return Duration(time.Duration(math.Round(s * 1e9)))
}

// Percent shows a fraction as a percentage to three significant digits:
// 0.001 -> "0.1 %", 0.0525 -> "5.25 %"; a non-zero share below 0.001 % is
// "< 0.001 %", never "0 %".
func Percent(frac float64) string {
	p := frac * 100
	switch {
	case p == 0:
		return "0 %"
	case p > 0 && p < 0.001:
		return "< 0.001 %"
	}
	return strconv.FormatFloat(p, 'g', 3, 64) + " %"
}

// Count writes n with thousands separators: 200000 -> "200,000".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Number shows a quantity such as calls in flight or a rate: whole numbers
// from 10 up, two significant digits below (12.8 -> "13", 0.45 -> "0.45").
func Number(x float64) string {
	if math.Abs(x) >= 10 {
		return Count(int64(math.Round(x)))
	}
	return strconv.FormatFloat(x, 'g', 2, 64)
}

// Quantile names a quantile as people do: 0.999 -> "p99.9", 0.5 -> "p50",
// 1 -> "max".
func Quantile(q float64) string {
	if q == 1 {
		return "max"
	}
	// Rounding to 9 decimals of a percent hides binary noise (1-0.001).
	p := math.Round(q*100*1e9) / 1e9
	return "p" + strconv.FormatFloat(p, 'f', -1, 64)
}

// NumberOf writes x as Number does with noun in the number it takes: "1
// call", "0.5 calls", "12 calls". noun is a regular English noun.
func NumberOf(x float64, noun string) string {
	if n := Number(x); n != "1" {
		return n + " " + noun + "s"
	}
	return "1 " + noun
}

// Calls counts calls in words: "1 call", "0 calls", "200,000 calls".
func Calls(n int64) string { return Plural(n, "call") }

// sizeUnits are the units ParseBytes reads, largest first within each
// system, matched regardless of case.
var sizeUnits = []struct {
	name string
	n    int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3},
	{"B", 1},
}

// ParseBytes reads a size given on the command line (--max-response-bytes): plain bytes (1048576)
// or a number with a unit, binary (KiB, MiB, GiB, TiB: powers of 1024) or
// decimal (kB, MB, GB, TB: powers of 1000), e.g. 512MiB, 1GB, 1.5 GiB.
// Units are matched regardless of case; single letters (K, M, G) are
// refused, as they mean 1000 to some tools and 1024 to others.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size: write bytes or a number with a unit, e.g. 1048576, 512MiB, 1GB", s)
	}
	mult := int64(1)
	if unit != "" {
		mult = 0
		for _, u := range sizeUnits {
			if strings.EqualFold(unit, u.name) {
				mult = u.n
				break
			}
		}
		if mult == 0 {
			return 0, fmt.Errorf("%q: unknown unit %q: use B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)", s, unit)
		}
	}
	n := f * float64(mult)
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if n != math.Trunc(n) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return int64(n), nil
}

// Bytes writes a size exactly, in the largest unit that divides it, the
// way caps are written: 268435456 -> "256 MiB", 1e9 -> "1 GB", 1000001 ->
// "1000001 bytes".
func Bytes(n int64) string {
	best := sizeUnits[len(sizeUnits)-1]
	for _, u := range sizeUnits {
		if n > 0 && n%u.n == 0 && u.n > best.n {
			best = u
		}
	}
	if best.n > 1 {
		return strconv.FormatInt(n/best.n, 10) + " " + best.name
	}
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Plural writes n, with thousands separators, and noun in the number n
// takes: "1 group", "0 groups", "1,200 edits". noun is a regular English
// noun (an s makes its plural).
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(n) + " " + noun + "s"
}
