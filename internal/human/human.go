// Package human formats numbers the way people write them in reports and
// reasons: durations to three significant digits, shares as percentages,
// counts with thousands separators. Every package that writes for people
// uses it, so the same value reads the same everywhere.
package human

import (
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

// Seconds shows a duration given in seconds like Duration.
func Seconds(s float64) string { return Duration(time.Duration(math.Round(s * 1e9))) }

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

// Calls counts calls in words: "1 call", "0 calls", "200,000 calls".
func Calls(n int64) string {
	if n == 1 {
		return "1 call"
	}
	return Count(n) + " calls"
}

// Bytes writes a size in binary units, the way caps are written: 1048576
// -> "1 MiB", 1536 -> "1.5 KiB", 100 -> "100 bytes". The figure has at most
// three significant digits, rounded down (a cap shown must not look larger
// than it is).
func Bytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	u, x := -1, float64(n)
	for x >= 1024 && u+1 < len(units) {
		x /= 1024
		u++
	}
	digits := 2
	switch {
	case x >= 100:
		digits = 0
	case x >= 10:
		digits = 1
	}
	p := math.Pow(10, float64(digits))
	return strconv.FormatFloat(math.Floor(x*p)/p, 'f', -1, 64) + " " + units[u]
}
