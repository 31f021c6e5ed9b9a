package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"
)

// This file holds the engine shared by the nginx and Apache access-log
// decoders: a log format compiled into a layout, a sequence of literal text
// and fields, matched against each line by its literal separators.
//
// Matching walks the line once. The leading literal must start the line.
// Each field's value runs from the current position to the next occurrence
// of the literal that follows it in the format (the whole literal, found
// with bytes.Index), with these refinements:
//
//   - a quoted field (the format has `"` on both sides of it) skips quotes
//     escaped with a backslash when the log escapes that way (nginx
//     escape=json, Apache);
//   - a list field (nginx's $upstream_* variables) does not end at a ", " or
//     " : " that separates two entries of its list;
//   - a field of fixed width ($time_local) takes that many bytes when the
//     literal follows there, so a space inside the value does not end it;
//   - the last field runs to the end of the line, or when the format ends
//     with literal text, to that text at the end of the line.
//
// No regular expression, no splitting, no allocation per line.

// logRole is what a field's value is used for.
type logRole uint8

const (
	roleSkip         logRole = iota
	roleLatency              // the chosen latency: a duration in f.unit, or a list of them
	roleConnect              // the upstream connect time, a list of seconds
	roleStatus               // the response status
	roleRequest              // a request line "GET /x HTTP/1.1": method and/or path
	roleMethod               // the method alone
	rolePath                 // the request target alone
	roleHost                 // the virtual host
	roleUpstream             // the upstream address: a list, the last entry is used
	roleUpstreamName         // the upstream's name (ingress-nginx $proxy_upstream_name)
	roleTimeCLF              // 07/Feb/2020:11:48:51 +0000
	roleTimeISO              // 2020-02-07T11:48:51+00:00
	roleTimeUnix             // seconds (or f.unit) since the epoch, with decimals
)

// logAggregate says how a list of durations becomes one.
type logAggregate uint8

const (
	aggSum  logAggregate = iota // the sum of the entries that have a value
	aggLast                     // the last entry that has a value
)

// logField is one variable or directive of a compiled format.
type logField struct {
	name string // as errors name it: "request_time", "%D"
	role logRole
	unit time.Duration // durations and Unix times: the unit of the numbers
	agg  logAggregate
	// list: the value is a list of entries separated by ", " (servers) or
	// " : " (internal redirects), each "-" when it has no value.
	list bool
	// quoted: the format has `"` before and after the value.
	quoted bool
	// width is the value's fixed width, 0 when it varies.
	width int
	// noValue is the Excluded reason for a latency of "-"; "" makes "-" an error.
	noValue string
	// method and path say which parts of a request line are used.
	method, path bool
	// lit is the literal text after the value; empty when the value ends the
	// format. last marks the format's last field.
	lit  []byte
	last bool
	// search: the value ends at the first lit after it, but for a quote
	// escaped with a backslash (see match): no width, no list, not last.
	search bool
}

// logLayout is a compiled log format.
type logLayout struct {
	prefix []byte // literal text before the first field
	fields []logField
	// backslash: a quoted value may hold a `"` escaped as `\"`.
	backslash bool
	// trimEnd: trailing spaces and tabs of a line are not part of the format.
	trimEnd bool

	clf clfCache
	iso isoCache
}

// logItem is one element of a lineResult format string before compilation: a
// literal (name == "") or a variable with the literal that follows it.
type logItem struct {
	name string // variable name as errors show it; "" for the leading literal
	key  string // name used to choose roles (lower-cased where the format is case-insensitive)
	lit  []byte
}

// Reasons of the access-log decoders.
const (
	reasonUnsetDash = "is unset (-)"
	reasonCLFTime   = "is not a time like 07/Feb/2020:11:48:51 +0000"
	reasonISOTime   = "is not a time like 2020-02-07T11:48:51+00:00"
	reasonUnix      = "is not a Unix time"
)

// claim gives field i the role r unless another role has it already, and
// returns it; nil when the format has no such field (i < 0).
func claim(fields []logField, i int, r logRole) *logField {
	if i < 0 {
		return nil
	}
	if fields[i].role == roleSkip {
		fields[i].role = r
	}
	return &fields[i]
}

// newLogLayout builds a layout from the items of a format: prefix is the text
// before the first variable, vars the variables with the text after each,
// roles the role of each variable (nil: skipped). It fails when a variable
// that is used has no text between it and its neighbour.
func newLogLayout(prefix []byte, vars []logItem, fields []logField) (*logLayout, error) {
	l := &logLayout{prefix: prefix}
	before := prefix // the literal before the value being read
	merged := false  // the value also holds skipped fields before it
	for i := range vars {
		f := fields[i]
		f.lit = vars[i].lit
		f.last = i == len(vars)-1
		if len(f.lit) == 0 && !f.last {
			if f.role != roleSkip || fields[i+1].role != roleSkip {
				return nil, fmt.Errorf("%s and %s follow each other with no text between them, so their values cannot be told apart",
					vars[i].name, vars[i+1].name)
			}
			merged = true // two skipped fields read as one
			continue
		}
		if merged {
			f.width, f.list, merged = 0, false, false
		}
		f.quoted = len(before) > 0 && before[len(before)-1] == '"' && len(f.lit) > 0 && f.lit[0] == '"'
		f.search = !f.last && !f.list && f.width == 0 && len(f.lit) > 0
		before = f.lit
		l.fields = append(l.fields, f)
	}
	// Trailing blanks are not part of a line unless the format ends with one.
	end := before
	l.trimEnd = len(end) == 0 || (end[len(end)-1] != ' ' && end[len(end)-1] != '\t')
	return l, nil
}

// Parse implements LineParser.
func (l *logLayout) Parse(line []byte, s *Sample, f *Fields) error {
	if l.trimEnd && len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = bytes.TrimRight(line, " \t")
	}
	if !bytes.HasPrefix(line, l.prefix) {
		return &FieldError{Reason: fmt.Sprintf("does not start with %q like the log format", l.prefix)}
	}
	pos := len(l.prefix)
	for i := range l.fields {
		fd := &l.fields[i]
		end, next := -1, -1
		if fd.search { // match's most common case, inline: the first lit, not escaped
			if j := indexLit(line[pos:], fd.lit); j >= 0 && !(fd.quoted && l.backslash && j > 0 && line[pos+j-1] == '\\') {
				end, next = pos+j, pos+j+len(fd.lit)
			}
		}
		if end < 0 {
			if end, next = l.match(line, pos, fd); end < 0 {
				return l.cutShort(line, pos, fd)
			}
		}
		if fd.role == roleSkip {
			pos = next
			continue
		}
		if err := l.use(fd, line[pos:end], s, f); err != nil {
			return err
		}
		pos = next
	}
	if pos != len(line) && len(l.fields) == 0 {
		return &FieldError{Reason: fmt.Sprintf("holds more than the log format's text %q", l.prefix)}
	}
	return nil
}

// match returns where the value of fd that starts at pos ends, and where the
// next value starts (after fd's literal); end is -1 when the literal is not
// found.
func (l *logLayout) match(line []byte, pos int, fd *logField) (end, next int) {
	lit := fd.lit
	if len(lit) == 0 {
		return len(line), len(line)
	}
	if fd.last {
		if len(line)-pos < len(lit) || !bytes.HasSuffix(line, lit) {
			return -1, -1
		}
		return len(line) - len(lit), len(line)
	}
	if w := fd.width; w > 0 && pos+w <= len(line) && bytes.HasPrefix(line[pos+w:], lit) {
		return pos + w, pos + w + len(lit)
	}
	from := pos
	for {
		j := indexLit(line[from:], lit)
		if j < 0 {
			return -1, -1
		}
		j += from
		if fd.quoted && l.backslash && isEscapedAt(line, pos, j) {
			from = j + 1
			continue
		}
		if fd.list {
			if lit[0] == ' ' && j > pos && line[j-1] == ',' {
				from = j + 1 // the space of a ", " inside the list
				continue
			}
			if n := nginxListSep(line[j:]); n > 0 && !bytes.HasPrefix(lit, line[j:j+n]) {
				from = j + n
				continue
			}
		}
		return j, j + len(lit)
	}
}

// indexLit is bytes.Index(s, lit) for the short literals between the
// fields of a format: the first byte found with IndexByte (vectorised),
// the rest compared there, with less overhead per call than bytes.Index.
func indexLit(s, lit []byte) int {
	c0 := lit[0]
	for i := 0; ; i++ {
		j := indexByteNear(s[i:], c0)
		if j < 0 {
			return -1
		}
		i += j
		if len(lit) == 1 {
			return i
		}
		if len(s)-i < len(lit) {
			return -1
		}
		if s[i+1] == lit[1] && (len(lit) == 2 || s[i+2] == lit[2] && (len(lit) == 3 || string(s[i+3:i+len(lit)]) == string(lit[3:]))) {
			return i
		}
	}
}

// indexByteNear is bytes.IndexByte for a byte that is mostly near the
// start of s, as the end of most fields of a log line is: the first 16
// bytes are looked at 8 at a time in a word, which costs less than setting
// up the vectorised search, and only then the rest with it.
func indexByteNear(s []byte, c byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s) && i < 16; i += 8 {
		x := binary.LittleEndian.Uint64(s[i:]) ^ (ones * uint64(c))
		if m := (x - ones) &^ x & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if j := bytes.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return -1
}

// isEscapedAt reports whether line[j] is preceded by an odd number of
// backslashes after start.
func isEscapedAt(line []byte, start, j int) bool {
	n := 0
	for k := j - 1; k >= start && line[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// nginxListSep returns the length of the list separator (", " or " : ")
// that b starts with, or 0.
func nginxListSep(b []byte) int {
	switch {
	case len(b) >= 2 && b[0] == ',' && b[1] == ' ':
		return 2
	case len(b) >= 3 && b[0] == ' ' && b[1] == ':' && b[2] == ' ':
		return 3
	}
	return 0
}

// nginxListEntry splits the first entry off a list value.
func nginxListEntry(v []byte) (entry, rest []byte, more bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == ',' || v[i] == ' ' {
			if n := nginxListSep(v[i:]); n > 0 {
				return v[:i], v[i+n:], true
			}
		}
	}
	return v, nil, false
}

// cutShort is the error for a line whose text after pos lacks fd's literal.
func (l *logLayout) cutShort(line []byte, pos int, fd *logField) error {
	if fd.last {
		return &FieldError{Reason: fmt.Sprintf("does not end with %q after %s like the log format (cut short, or written with another format)", fd.lit, fd.name)}
	}
	return &FieldError{Reason: fmt.Sprintf("ends too soon: no %q after %s where the log format has one (cut short, or written with another format)", fd.lit, fd.name)}
}

// use stores the value v of fd in s and f.
func (l *logLayout) use(fd *logField, v []byte, s *Sample, f *Fields) error {
	switch fd.role {
	case roleSkip:
	case roleLatency:
		d, known, err := logDuration(fd, v)
		if err != nil {
			return err
		}
		switch {
		case known:
			s.Latency = d
		case fd.noValue != "":
			s.Excluded = fd.noValue
		default:
			return &FieldError{Field: fd.name, Value: string(v), Reason: reasonUnsetDash}
		}
	case roleConnect:
		d, known, err := logDuration(fd, v)
		if err != nil {
			return err
		}
		s.Connect, s.ConnectKnown = d, known
	case roleStatus:
		st, ok := logStatus(v)
		if !ok {
			return &FieldError{Field: fd.name, Value: string(v), Reason: reasonStatus}
		}
		s.Status = st
	case roleRequest:
		method, target := splitRequestLine(v)
		if fd.method {
			f.Method = method
		}
		if fd.path {
			f.Path = target
		}
	case roleMethod:
		if !isUnsetValue(v) {
			f.Method = v
		}
	case rolePath:
		if !isUnsetValue(v) {
			f.Path = v
		}
	case roleHost:
		if !isUnsetValue(v) {
			f.Host = v
		}
	case roleUpstream:
		var last []byte
		for rest, more := v, true; more; {
			var e []byte
			e, rest, more = nginxListEntry(rest)
			if !isUnsetValue(e) {
				last = e
			}
		}
		f.Upstream = last
	case roleUpstreamName:
		if !isUnsetValue(v) {
			f.Upstream = v
		}
	case roleTimeCLF:
		if isUnsetValue(v) {
			break
		}
		t, ok := l.clf.parse(v)
		if !ok {
			return &FieldError{Field: fd.name, Value: string(v), Reason: reasonCLFTime}
		}
		s.Time = t
	case roleTimeISO:
		if isUnsetValue(v) {
			break
		}
		t, ok := l.iso.parse(v)
		if !ok {
			return &FieldError{Field: fd.name, Value: string(v), Reason: reasonISOTime}
		}
		s.Time = t
	case roleTimeUnix:
		if isUnsetValue(v) {
			break
		}
		d, ok := decimalBytes(v)
		if !ok || (d.neg && !d.isZero()) {
			return &FieldError{Field: fd.name, Value: string(v), Reason: reasonUnix}
		}
		ns, ok := d.scale(fd.unit)
		if !ok {
			return &FieldError{Field: fd.name, Value: string(v), Reason: reasonRange}
		}
		s.Time = time.Unix(0, ns).UTC()
	}
	return nil
}

// isUnsetValue reports whether v is empty or "-", how logs write a value that is
// not set.
func isUnsetValue(v []byte) bool {
	return len(v) == 0 || (len(v) == 1 && v[0] == '-')
}

// logDuration reads a duration in fd.unit, or a list of them aggregated with
// fd.agg; known is false when no entry has a value ("-").
func logDuration(fd *logField, v []byte) (d time.Duration, known bool, err error) {
	if !fd.list {
		if len(v) == 1 && v[0] == '-' {
			return 0, false, nil
		}
		if d, ok := plainLatency(v, fd.unit); ok {
			return d, true, nil
		}
		d, reason := parseLatency(string(v), fd.unit)
		if reason != "" {
			return 0, false, &FieldError{Field: fd.name, Value: string(v), Reason: reason}
		}
		return d, true, nil
	}
	for rest, more := v, true; more; {
		var e []byte
		e, rest, more = nginxListEntry(rest)
		if len(e) == 1 && e[0] == '-' {
			continue
		}
		x, reason := parseLatency(string(e), fd.unit)
		if reason != "" {
			return 0, false, &FieldError{Field: fd.name, Value: string(v), Reason: reason}
		}
		if fd.agg == aggLast {
			d = x
		} else if d += x; d < 0 {
			return 0, false, &FieldError{Field: fd.name, Value: string(v), Reason: reasonRange}
		}
		known = true
	}
	return d, known, nil
}

// logStatus reads a status code of at most three digits; "-" reads as 0.
func logStatus(v []byte) (int, bool) {
	if len(v) == 0 || len(v) > 3 {
		return 0, false
	}
	if len(v) == 1 && v[0] == '-' {
		return 0, true
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// splitRequestLine splits a request line "GET /x?y HTTP/1.1" into its method and
// target. An HTTP/0.9 line "GET /x" has no protocol; a line without a space
// ("-", garbage) has neither.
func splitRequestLine(v []byte) (method, target []byte) {
	i := indexByteNear(v, ' ')
	if i <= 0 {
		return nil, nil
	}
	method, rest := v[:i], v[i+1:]
	if j := bytes.LastIndexByte(rest, ' '); j >= 0 && bytes.HasPrefix(rest[j+1:], []byte("HTTP/")) {
		rest = rest[:j]
	}
	return method, rest
}

// decimalBytes is parseDecimal over bytes.
func decimalBytes(b []byte) (decimal, bool) {
	return parseDecimal(string(b))
}

// clfCache parses Common Log Format times (07/Feb/2020:11:48:51 +0000) by
// hand, remembering the last second and the last day: consecutive lines of
// a log mostly share both.
type clfCache struct {
	sec    [26]byte // the last time lineResult
	t      time.Time
	day    [11]byte // its "07/Feb/2020"
	zone   [5]byte  // its "+0000"
	dayUTC int64    // Unix seconds of that day's local midnight
	valid  bool
}

var clfMonths = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

func (c *clfCache) parse(v []byte) (time.Time, bool) {
	if len(v) != 26 {
		return time.Time{}, false
	}
	if c.valid && string(v) == string(c.sec[:]) {
		return c.t, true
	}
	if v[2] != '/' || v[6] != '/' || v[11] != ':' || v[14] != ':' || v[17] != ':' || v[20] != ' ' {
		return time.Time{}, false
	}
	hh, ok1 := twoDigits(v[12:])
	mm, ok2 := twoDigits(v[15:])
	ss, ok3 := twoDigits(v[18:])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 60 {
		return time.Time{}, false
	}
	if !c.valid || string(v[:11]) != string(c.day[:]) || string(v[21:]) != string(c.zone[:]) {
		dd, ok := twoDigits(v)
		if !ok {
			return time.Time{}, false
		}
		month := 0
		for i, m := range clfMonths {
			if string(v[3:6]) == m {
				month = i + 1
				break
			}
		}
		year, ok := allDigits(v[7:11])
		if !ok || month == 0 || dd < 1 || dd > daysInMonth(month, year) {
			return time.Time{}, false
		}
		off, ok := clfZoneOffset(v[21], v[22:24], v[24:26])
		if !ok {
			return time.Time{}, false
		}
		copy(c.day[:], v[:11])
		copy(c.zone[:], v[21:])
		c.dayUTC = daysFromCivil(year, month, dd)*86400 - int64(off)
	}
	c.t = time.Unix(c.dayUTC+int64(hh*3600+mm*60+ss), 0).UTC()
	copy(c.sec[:], v)
	c.valid = true
	return c.t, true
}

// isoCache parses ISO 8601 times as nginx's $time_iso8601 writes them
// (2020-02-07T11:48:51+00:00; "Z" and fractions of a second accepted) by
// hand, remembering the last one.
type isoCache struct {
	last  [25]byte
	t     time.Time
	valid bool
}

func (c *isoCache) parse(v []byte) (time.Time, bool) {
	if len(v) == 25 && c.valid && string(v) == string(c.last[:]) {
		return c.t, true
	}
	if len(v) < 20 || v[4] != '-' || v[7] != '-' || (v[10] != 'T' && v[10] != ' ') || v[13] != ':' || v[16] != ':' {
		return time.Time{}, false
	}
	year, ok0 := allDigits(v[:4])
	month, ok1 := twoDigits(v[5:])
	dd, ok2 := twoDigits(v[8:])
	hh, ok3 := twoDigits(v[11:])
	mm, ok4 := twoDigits(v[14:])
	ss, ok5 := twoDigits(v[17:])
	if !ok0 || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || month < 1 || month > 12 || dd < 1 || dd > daysInMonth(month, year) ||
		hh > 23 || mm > 59 || ss > 60 {
		return time.Time{}, false
	}
	rest := v[19:]
	var ns int64
	if len(rest) > 0 && rest[0] == '.' {
		i := 1
		scale := int64(1e8)
		for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
			ns += int64(rest[i]-'0') * scale
			scale /= 10
		}
		if i == 1 {
			return time.Time{}, false
		}
		rest = rest[i:]
	}
	off := 0
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && rest[3] == ':':
		var ok bool
		if off, ok = clfZoneOffset(rest[0], rest[1:3], rest[4:6]); !ok {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	sec := daysFromCivil(year, month, dd)*86400 + int64(hh*3600+mm*60+ss) - int64(off)
	t := time.Unix(sec, ns).UTC()
	if len(v) == 25 {
		copy(c.last[:], v)
		c.t, c.valid = t, true
	}
	return t, true
}

// clfZoneOffset reads a zone offset in seconds from its sign, hours and minutes.
func clfZoneOffset(sign byte, hours, minutes []byte) (int, bool) {
	h, ok1 := twoDigits(hours)
	m, ok2 := twoDigits(minutes)
	if !ok1 || !ok2 || m > 59 || (sign != '+' && sign != '-') {
		return 0, false
	}
	off := h*3600 + m*60
	if sign == '-' {
		off = -off
	}
	return off, true
}

// twoDigits reads the two decimal digits b starts with.
func twoDigits(b []byte) (int, bool) {
	if len(b) < 2 || b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}

// allDigits reads b, all decimal digits.
func allDigits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}

// daysInMonth returns the number of days of a month (1-12) in a year.
func daysInMonth(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days from 1970-01-01 to a date of the proleptic
// Gregorian calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
