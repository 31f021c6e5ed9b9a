package promsource

import (
	"math"
	"strconv"
)

// FormatLE writes a bound given in seconds as the le label of a histogram whose
// unit lasts unitSeconds (0.001 for a _milliseconds histogram), as
// client_golang's text format writes floats (expfmt's writeFloat:
// strconv.FormatFloat(v, 'g', -1, 64), "+Inf"). The division by the unit
// is rounded to 12 significant digits, so that 0.25 s in milliseconds is
// "250", not "249.99999999999997". Every le the tool writes or asks for is
// written here: the rules, check's advice and analyze's suggested bound.
func FormatLE(boundSeconds, unitSeconds float64) string {
	if math.IsInf(boundSeconds, 1) {
		return "+Inf"
	}
	v := boundSeconds
	if unitSeconds > 0 && unitSeconds != 1 {
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v/unitSeconds, 'g', 12, 64), 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
