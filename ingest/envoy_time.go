package ingest

import (
	"time"
)

// envoyClock reads RFC 3339 timestamps in UTC, "2019-02-12T18:37:42.921Z"
// (Envoy's %START_TIME%, Traefik's StartUTC), without time.Parse: it keeps
// the Unix time of the last hour it saw, so a line costs a comparison of 13
// bytes and a few digit conversions. Any other form (an offset, a space for
// the T, Unix seconds) goes to parseTime.
type envoyClock struct {
	hour [13]byte // "2019-02-12T18"
	unix int64    // Unix time of hour
	set  bool
}

func envoyDigits2(b []byte) (int, bool) {
	if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}

// parse reads b; ok is false when it is not a timestamp parseTime accepts.
func (c *envoyClock) parse(b []byte) (time.Time, bool) {
	if t, ok := c.fast(b); ok {
		return t, true
	}
	return parseTime(string(b))
}

// fast reads "YYYY-MM-DDTHH:MM:SS[.fraction]Z" with at most 9 fraction
// digits; ok is false for anything else, valid or not.
func (c *envoyClock) fast(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	if !c.set || string(b[:13]) != string(c.hour[:]) {
		y1, ok1 := envoyDigits2(b[0:])
		y2, ok2 := envoyDigits2(b[2:])
		mo, ok3 := envoyDigits2(b[5:])
		d, ok4 := envoyDigits2(b[8:])
		h, ok5 := envoyDigits2(b[11:])
		if !(ok1 && ok2 && ok3 && ok4 && ok5) || mo < 1 || mo > 12 || d < 1 || h > 23 {
			return time.Time{}, false
		}
		t := time.Date(y1*100+y2, time.Month(mo), d, h, 0, 0, 0, time.UTC)
		if t.Day() != d { // February 30th
			return time.Time{}, false
		}
		copy(c.hour[:], b[:13])
		c.unix, c.set = t.Unix(), true
	}
	mi, ok1 := envoyDigits2(b[14:])
	s, ok2 := envoyDigits2(b[17:])
	if !ok1 || !ok2 || mi > 59 || s > 59 {
		return time.Time{}, false
	}
	ns := 0
	if frac := b[19 : len(b)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		scale := 1_000_000_000
		for _, ch := range frac[1:] {
			if ch < '0' || ch > '9' {
				return time.Time{}, false
			}
			scale /= 10
			ns += int(ch-'0') * scale
		}
	}
	return time.Unix(c.unix+int64(mi*60+s), int64(ns)).UTC(), true
}
