package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Apache's %{format}t writes the request's time with strftime(3), in a
// format of the user's own: the mod_log_config documentation's example of
// a time with milliseconds takes three directives,
//
//	[%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t]
//
// The layout engine (nginx_layout.go) reads the whole-time shapes, %t and
// its twin %{%d/%b/%Y:%H:%M:%S %z}t, and Unix times (%{sec}t, %{msec}t,
// %{usec}t, %{%s}t). Other strftime directives are skipped by it and read
// back here, after it, when between them they hold a whole date and time:
// the year (%Y, or %y as 20yy), the month (%m, %b, %B), the day (%d, %e),
// the hour, minute and second (%H, %M, %S, or %T, %F, %D, %R), with
// msec_frac or usec_frac for the fraction and %z for the zone (UTC without
// one: only differences between times matter). Weekday names (%a, %A) and
// zone names (%Z) are read past. A format that does not hold a whole date
// and time, or uses another conversion, is not read: the log is read
// without its times, and the decoder says so in a note.

// apacheTimePart is one strftime directive of a format, or its fraction.
type apacheTimePart struct {
	field int    // index among the layout's fields
	spec  string // the strftime format; "" for msec_frac and usec_frac
}

// apacheClock reads the time of a line from the fields of a layout that
// the layout skips (see above).
type apacheClock struct {
	l     *logLayout
	parts []apacheTimePart
	last  int // index of the last field read
}

// apacheTimeConversions are the strftime conversions read back, each with
// the width of its value (0: it varies).
var apacheTimeConversions = map[byte]int{
	'd': 2, 'e': 2, 'm': 2, 'b': 3, 'h': 3, 'B': 0, 'Y': 4, 'y': 2, 'H': 2, 'M': 2, 'S': 2,
	'z': 5, 'a': 3, 'A': 0, 'Z': 0, 'T': 8, 'F': 10, 'D': 8, 'R': 5, '%': 1, 'n': 1, 't': 1,
}

// apacheStrftimeWidth returns the width of what spec writes, 0 when it
// varies or spec has a conversion that is not read back; ok is false then.
func apacheStrftimeWidth(spec string) (width int, ok bool) {
	fixed := true
	for i := 0; i < len(spec); i++ {
		if spec[i] != '%' {
			width++
			continue
		}
		if i++; i >= len(spec) {
			return 0, false
		}
		w, known := apacheTimeConversions[spec[i]]
		if !known {
			return 0, false
		}
		if w == 0 {
			fixed = false
		}
		width += w
	}
	if !fixed {
		return 0, true
	}
	return width, true
}

// apacheExpand replaces the conversions that stand for others (%T, %F, %D,
// %R, %h) by them.
func apacheExpand(spec string) string {
	return strings.NewReplacer("%T", "%H:%M:%S", "%F", "%Y-%m-%d", "%D", "%m/%d/%y", "%R", "%H:%M", "%h", "%b", "%%", "%%").Replace(spec)
}

// newApacheClock returns the reader of the strftime directives among vars
// (whose keys are "t:strftime:" + spec or "t:frac") in l, or the note that
// says why they cannot be read.
func newApacheClock(l *logLayout, vars []logItem) (*apacheClock, string) {
	// The layout's fields are vars less those merged into the next one
	// (no text between them; see newLogLayout).
	c := &apacheClock{l: l}
	var names []string
	var has [256]bool
	j := 0
	for i, v := range vars {
		merged := len(v.lit) == 0 && i != len(vars)-1
		spec, isTime := strings.CutPrefix(v.key, "t:strftime:")
		if v.key == "t:frac" {
			spec, isTime = "", true
		}
		if isTime {
			names = append(names, v.name)
			if merged || i > 0 && len(vars[i-1].lit) == 0 {
				return nil, apacheTimeNote(names, "it has no text between it and its neighbour")
			}
			spec = apacheExpand(spec)
			if _, ok := apacheStrftimeWidth(spec); !ok {
				return nil, apacheTimeNote(names, "it holds a conversion that is not read back")
			}
			for k := 0; k+1 < len(spec); k++ {
				if spec[k] == '%' {
					has[spec[k+1]] = true
					k++
				}
			}
			c.parts = append(c.parts, apacheTimePart{field: j, spec: spec})
			c.last = j
		}
		if !merged {
			j++
		}
	}
	if len(c.parts) == 0 {
		return nil, ""
	}
	if !(has['Y'] || has['y']) || !(has['m'] || has['b'] || has['B']) || !(has['d'] || has['e']) ||
		!has['H'] || !has['M'] || !has['S'] {
		return nil, apacheTimeNote(names, "between them they hold no whole date and time")
	}
	return c, ""
}

// apacheTimeNote says that the times of directives are not read, and why.
func apacheTimeNote(names []string, why string) string {
	return fmt.Sprintf("the times in %s are not read (%s): calls have no time, so no rate is measured from them; "+
		"%%t, %%{%s}t, %%{sec}t, %%{msec}t or %%{usec}t are read", strings.Join(names, " "), why, clfTimeFormat)
}

// apacheParser is the layout of an Apache LogFormat and the reader of its
// strftime times.
type apacheParser struct {
	*logLayout
	clock *apacheClock
}

func (p *apacheParser) Parse(line []byte, s *Sample, f *Fields) error {
	if err := p.logLayout.Parse(line, s, f); err != nil {
		return err
	}
	if t, ok := p.clock.read(line); ok {
		s.Time = t
	}
	return nil
}

// apacheClockDate holds the parts of a time read so far.
type apacheClockDate struct {
	year, month, day, hour, minute, sec, nanos int
	zone                                       int // seconds east of UTC
}

// read returns the time of a line the layout has parsed; ok is false when a
// value does not read as its format says (the line keeps no time: a time
// is not worth an error when the latency is good).
func (c *apacheClock) read(line []byte) (time.Time, bool) {
	l := c.l
	if l.trimEnd {
		line = bytes.TrimRight(line, " \t")
	}
	pos := len(l.prefix)
	d := apacheClockDate{month: -1}
	part := 0
	for i := 0; i <= c.last && part < len(c.parts); i++ {
		end, next := l.match(line, pos, &l.fields[i])
		if end < 0 {
			return time.Time{}, false
		}
		for part < len(c.parts) && c.parts[part].field == i {
			if !d.read(c.parts[part].spec, line[pos:end]) {
				return time.Time{}, false
			}
			part++
		}
		pos = next
	}
	if d.month < 1 || d.month > 12 || d.day < 1 || d.day > daysInMonth(d.month, d.year) ||
		d.hour > 23 || d.minute > 59 || d.sec > 60 {
		return time.Time{}, false
	}
	sec := daysFromCivil(d.year, d.month, d.day)*86400 + int64(d.hour*3600+d.minute*60+d.sec) - int64(d.zone)
	return time.Unix(sec, int64(d.nanos)).UTC(), true
}

var apacheLongMonths = [12]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// read reads v, written with spec ("" for a fraction of a second), into d.
func (d *apacheClockDate) read(spec string, v []byte) bool {
	if spec == "" { // msec_frac, usec_frac
		if len(v) == 0 || len(v) > 9 {
			return false
		}
		n, ok := allDigits(v)
		for range 9 - len(v) {
			n *= 10
		}
		d.nanos = n
		return ok
	}
	num := func(width int, spacePad bool) (int, bool) {
		if len(v) < width {
			return 0, false
		}
		b := v[:width]
		if spacePad && b[0] == ' ' {
			b = b[1:]
		}
		n, ok := allDigits(b)
		v = v[width:]
		return n, ok
	}
	word := func() []byte { // letters, for names of months, days and zones
		i := 0
		for i < len(v) && isASCIILetter(v[i]) {
			i++
		}
		w := v[:i]
		v = v[i:]
		return w
	}
	var ok bool
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if c != '%' || i+1 >= len(spec) {
			if len(v) == 0 || v[0] != c {
				return false
			}
			v = v[1:]
			continue
		}
		i++
		switch spec[i] {
		case 'Y':
			d.year, ok = num(4, false)
		case 'y':
			d.year, ok = num(2, false)
			d.year += 2000
		case 'm':
			d.month, ok = num(2, false)
		case 'd':
			d.day, ok = num(2, false)
		case 'e':
			d.day, ok = num(2, true)
		case 'H':
			d.hour, ok = num(2, false)
		case 'M':
			d.minute, ok = num(2, false)
		case 'S':
			d.sec, ok = num(2, false)
		case 'b', 'B':
			w := word()
			ok = false
			for k := range 12 {
				if spec[i] == 'b' && string(w) == clfMonths[k] || spec[i] == 'B' && string(w) == apacheLongMonths[k] {
					d.month, ok = k+1, true
				}
			}
		case 'a', 'A', 'Z':
			ok = len(word()) > 0
		case 'z':
			if len(v) < 5 {
				return false
			}
			d.zone, ok = clfZoneOffset(v[0], v[1:3], v[3:5])
			v = v[5:]
		case '%', 'n', 't':
			want := map[byte]byte{'%': '%', 'n': '\n', 't': '\t'}[spec[i]]
			ok = len(v) > 0 && v[0] == want
			if ok {
				v = v[1:]
			}
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return len(v) == 0
}
