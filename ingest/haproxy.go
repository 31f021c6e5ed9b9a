package ingest

import (
	"bytes"
	"io"
	"math"
	"time"
)

// HAProxy "option httplog" lines (HAProxy configuration manual, section 8.2.3
// "HTTP log format"):
//
//	[syslog prefix] client_ip:port [request_date] frontend backend/server \
//	  TR/Tw/Tc/Tr/Ta status bytes_read req_cookie resp_cookie termination_state \
//	  actconn/feconn/beconn/srv_conn/retries srv_queue/backend_queue \
//	  [{captured request headers}] [{captured response headers}] "http_request"
//
// The syslog prefix is whatever precedes the client: RFC 3164 ("Jul 30
// 09:03:52 host haproxy[32450]: ", with or without "<PRI>"), RFC 5424
// ("<134>1 2026-11-29T10:00:00Z host haproxy 123 - - ") or nothing ("log
// stdout format raw"). The parser does not read it: it finds the request date
// ("[30/Jul/2018:09:03:52.726]", which no syslog header looks like) and reads
// the fields from there, so any prefix a log shipper adds works too (the
// line decoder leaves syslog headers to it: ownPrefixes).
//
// HAProxy's own messages in the same log (a server going down, a failed TLS
// handshake, a proxy stopping: see hapNotRequest) are not requests: Parse
// returns them as such (NotRequestError), not as bad lines.
//
// Custom log-formats built on the httplog string sometimes add fields
// between the server and the timers (a Host header, for example): the timers
// are the first token of five '/'-separated parts that is followed by a
// token without '/' (the status; the connection counts, also five parts, are
// followed by the queue counts "0/0").
//
// Timers are milliseconds; -1 marks a phase that did not complete (section
// 8.4 "Timing events"). Older versions log Tq/Tw/Tc/Tr/Tt in the same places.
//
// Which measure is the latency (Options.Latency):
//
//   - "request" (the default): Ta, the time the request was active in
//     HAProxy, from its first byte to the last byte of the response. It is
//     what a client of HAProxy waits (less its network), the same measure as
//     nginx's $request_time, so it is the default of every log format.
//   - "upstream" (or "upstream-header"): Tr, from the connection to the
//     server to its complete response headers. It is the backend's own time,
//     the one to calibrate HAProxy's "timeout server" or any client calling
//     that backend directly; it leaves out the queue, the connect and the
//     body.
//
// Under "option logasap" Ta is prefixed with '+' and only equals
// TR+Tw+Tc+Tr: the log was written when the response headers were sent, so
// the value is the time to the response headers, fully measured. It is read
// as that, not as a lower bound of the whole exchange: logasap is meant for
// downloads, whose total time measures the size of the file and the client's
// bandwidth, and marking every line censored would leave nothing measured.
//
// Tc (when not -1) is the sample's connect time, retries included.
//
// The termination state decides what the measure means (section 8.5
// "Session state at disconnection"). Its first character is what ended the
// session, its second the phase the session was in then:
//
//	first  meaning (manual)                              the sample
//	-      normal completion                             measured
//	s      server-side timeout expired                   censored: it took at least this long
//	C      client aborted (like nginx's 499)             censored, except CR/CT: excluded
//	c      client-side timeout expired                   censored in phases Q, C, H; excluded
//	                                                     in R, T (the request never reached a
//	                                                     server) and D, L (the client stopped
//	                                                     reading: Ta then measures the client)
//	S      server aborted or refused the connection      excluded: a fast failure
//	P      proxy blocked the request or the response     excluded
//	L      handled locally by HAProxy (stats, redirect)  excluded: no server involved
//	R      proxy resource exhausted                      excluded
//	I      internal error in HAProxy                     excluded
//	D      killed: the server was detected down          excluded
//	U      killed: an active server came back (backup)   excluded
//	K      killed by an admin                            excluded
//	other  (a code newer than this parser)               excluded
//
// Excluded samples carry the reason "haproxy XY" (the first two characters
// of the state, e.g. "haproxy SH"), which reports count by reason.
//
// With "upstream" (Tr) the same table applies with two changes: when Tr was
// measured (not -1) it is a complete observation whatever happened later
// (a client abort or a server timeout in the data phase ends the session
// after the headers Tr measures), so it is not censored; when Tr is -1 and
// the session ended waiting for the response headers (phase H), the server
// took at least Ta-(TR+Tw+Tc) (section 8.4), a censored observation; when it
// ended before any server was reached (phases R, Q, C, T), there is no
// server time at all and the sample is excluded ("haproxy sC", ...).
//
// Ta is never -1 (section 8.4); should a line have it, the sum of the timers
// that are not -1 is taken as a censored lower bound.
//
// Fields: Method and Path come from the quoted request ("<BADREQ>" and ""
// give none); Upstream is the backend name, not backend/server, because a
// timeout is set per backend ("timeout server") and servers of one backend
// are interchangeable; Host is the first captured request header when it can
// only be a host name (letters, digits, '.', '-', an optional :port, a dot or
// "localhost"), i.e. with "capture request header Host" as the first
// capture. The request date becomes Sample.Time, read as UTC because HAProxy
// logs local time without a zone (only differences between times matter).
type haproxyParser struct {
	tr bool // Latency "upstream": Tr instead of Ta
	// reasons holds the exclusion reasons by termination state, built once
	// per state so that a line costs no allocation.
	reasons map[[2]byte]string
}

func newHAProxy(r io.Reader, name string, o Options) (Decoder, error) {
	tr, err := upstreamMeasure("haproxy", o.Latency)
	if err != nil {
		return nil, err
	}
	return newLogDecoder(r, name, o, &haproxyParser{tr: tr, reasons: map[[2]byte]string{}})
}

func init() {
	Register(Format{
		Name:       "haproxy",
		Priority:   20,
		Summary:    `HAProxy "option httplog" lines, with or without a syslog prefix: Ta (or Tr with {latency} upstream), Tc, termination state`,
		Sniff:      sniffHAProxy,
		NotRequest: hapNotRequest,
		Latencies:  upstreamLatencies,
		New:        newHAProxy,
	})
}

// ownPrefixes: the parser finds the request date behind any syslog header
// (see haproxyParser), so the line decoder leaves syslog headers to it.
func (p *haproxyParser) ownPrefixes() prefixRules { return prefixSyslog }

// The reasons of HAProxy's lines that are not requests (NotRequestError).
const (
	hapProxyStarted notRequest = "haproxy proxy started"
	hapProxyStopped notRequest = "haproxy proxy stopped"
	hapProxyPaused  notRequest = "haproxy proxy paused or resumed"
	hapServerState  notRequest = "haproxy server state"
	hapNoServer     notRequest = "haproxy no server available"
	hapSSLHandshake notRequest = "haproxy SSL handshake failure"
	hapConnError    notRequest = "haproxy connection error"
	hapConnectLog   notRequest = "haproxy connection without httplog"
)

// hapNotRequest says which of HAProxy's own messages line (without its
// syslog header) is, "" when it is none. HAProxy sends them to the same log
// as the requests (src/proxy.c, src/server.c, src/check.c, src/session.c):
//
//	Proxy fe started.                                  (versions before 2.3 at startup)
//	Proxy fe stopped (cumulated conns: FE: 1, BE: 0).  (soft stop, reload)
//	Stopping frontend fe in 0 ms.                      (and proxy, backend)
//	Pausing frontend fe. / Resuming frontend fe.
//	Server app/go is DOWN, reason: ... / is UP ...     (and "Health check for server ...")
//	backend app has no server available!
//	127.0.0.1:56426 [01/Dec/2026:20:19:46.987] fe/2: SSL handshake failure
//	                                                   (a connection that failed before its
//	                                                   first request; other such errors too)
//	Connect from 127.0.0.1:1234 to 127.0.0.1:80 (fe/HTTP)  (a frontend without httplog)
func hapNotRequest(line []byte) string {
	return string(hapMessage(line))
}

func hapMessage(line []byte) notRequest {
	has := func(p string) bool { return bytes.HasPrefix(line, []byte(p)) }
	switch {
	case has("Proxy ") && bytes.HasSuffix(line, []byte(" started.")):
		return hapProxyStarted
	case has("Proxy ") && bytes.Contains(line, []byte(" stopped (")),
		(has("Stopping proxy ") || has("Stopping frontend ") || has("Stopping backend ")) && bytes.HasSuffix(line, []byte(" ms.")):
		return hapProxyStopped
	case has("Pausing ") || has("Resuming ") || has("Paused ") || has("Resumed "):
		if w, _ := hapToken(line[bytes.IndexByte(line, ' '):]); string(w) == "proxy" || string(w) == "frontend" || string(w) == "backend" {
			return hapProxyPaused
		}
	case has("Server ") && (bytes.Contains(line, []byte(" is DOWN")) || bytes.Contains(line, []byte(" is UP")) ||
		bytes.Contains(line, []byte(" is going DOWN")) || bytes.Contains(line, []byte(" maintenance")) ||
		bytes.Contains(line, []byte(" is stopping")) || bytes.Contains(line, []byte(" is leaving"))),
		has("Health check for ") || has("Agent check for "):
		return hapServerState
	case (has("backend ") || has("proxy ")) && bytes.HasSuffix(line, []byte(" has no server available!")):
		return hapNoServer
	case has("Connect from ") && bytes.Contains(line, []byte(" to ")):
		return hapConnectLog
	}
	// client_ip:port [date] frontend/listener: message
	at := hapDateAt(line)
	if at <= 0 || line[at-1] != ' ' || bytes.IndexByte(line[:at-1], ' ') >= 0 || bytes.IndexByte(line[:at], ':') < 0 {
		return ""
	}
	_, n, ok := hapParseDate(line[at:])
	if !ok {
		return ""
	}
	where, msg := hapToken(line[at+n:])
	if len(where) < 2 || where[len(where)-1] != ':' || bytes.IndexByte(where, '/') < 0 || len(bytes.TrimSpace(msg)) == 0 {
		return ""
	}
	if bytes.Contains(msg, []byte("SSL")) { // "SSL handshake failure", "Timeout during SSL handshake", ...
		return hapSSLHandshake
	}
	return hapConnError
}

// sniffHAProxy accepts a line that parses as an httplog line.
func sniffHAProxy(line []byte) bool {
	p := haproxyParser{reasons: map[[2]byte]string{}}
	var s Sample
	var f Fields
	return p.Parse(line, &s, &f) == nil
}

// haproxyTimerNames name the timers in errors, in their order in the line.
var haproxyTimerNames = [5]string{"TR", "Tw", "Tc", "Tr", "Ta"}

// hapMaxMillis is the largest number of milliseconds a time.Duration holds.
const hapMaxMillis = math.MaxInt64 / int64(time.Millisecond)

// Parse reads one httplog line; see haproxyParser.
func (p *haproxyParser) Parse(line []byte, s *Sample, f *Fields) error {
	at := hapDateAt(line)
	if at < 0 {
		if nr := hapMessage(stripPrefixes(line, allPrefixes)); nr != "" {
			return nr
		}
		return &FieldError{Reason: "is not an HAProxy httplog line: no request date like [30/Jul/2018:09:03:52.726]"}
	}
	t, n, ok := hapParseDate(line[at:])
	if !ok {
		date := line[at+1:]
		if end := bytes.IndexByte(date, ']'); end >= 0 {
			date = date[:end]
		}
		return &FieldError{Field: "request_date", Value: string(date), Reason: "is not a date like 30/Jul/2018:09:03:52.726"}
	}
	s.Time = t
	rest := line[at+n:]

	var frontend, backend []byte
	frontend, rest = hapToken(rest)
	backend, rest = hapToken(rest)
	if len(frontend) > 0 && frontend[len(frontend)-1] == ':' {
		if nr := hapMessage(stripPrefixes(line, allPrefixes)); nr != "" {
			return nr // a connection error, before any request
		}
	}
	if len(frontend) == 0 || len(backend) == 0 {
		return &FieldError{Reason: "is not an HAProxy httplog line: no frontend and backend/server after the date"}
	}
	if i := bytes.IndexByte(backend, '/'); i >= 0 {
		backend = backend[:i]
	}
	f.Upstream = backend

	// The timers: the first five-part token followed by one without '/'.
	var timers, status []byte
	for {
		var tok []byte
		tok, rest = hapToken(rest)
		if len(tok) == 0 {
			return &FieldError{Reason: "has no TR/Tw/Tc/Tr/Ta timers followed by a status (a tcplog line, or not option httplog?)"}
		}
		if hapFiveParts(tok) {
			if next, after := hapToken(rest); len(next) > 0 && bytes.IndexByte(next, '/') < 0 {
				timers, status, rest = tok, next, after
				break
			}
		}
	}
	var ms [5]int64
	for i := range ms {
		var part []byte
		if j := bytes.IndexByte(timers, '/'); j >= 0 {
			part, timers = timers[:j], timers[j+1:]
		} else {
			part = timers
		}
		raw := part
		if i == 4 && part[0] == '+' { // option logasap: see haproxyParser
			part = part[1:]
		}
		v, reason := hapMillis(part)
		if reason != "" {
			return &FieldError{Field: haproxyTimerNames[i], Value: string(raw), Reason: reason}
		}
		ms[i] = v
	}

	if len(status) == 2 && status[0] == '-' && status[1] == '1' {
		s.Status = 0 // HAProxy logs -1 when no status was sent
	} else if st, ok := hapStatus(status); ok {
		s.Status = st
	} else {
		return &FieldError{Field: "status", Value: string(status), Reason: reasonStatus}
	}

	// bytes_read, captured_request_cookie, captured_response_cookie, then
	// the termination state.
	var tsc []byte
	for range 4 {
		tsc, rest = hapToken(rest)
	}
	if len(tsc) == 0 {
		return &FieldError{Reason: "ends before the termination state"}
	}
	if !hapTerminationState(tsc) {
		return &FieldError{Field: "termination_state", Value: string(tsc), Reason: "is not a termination state (like ---- or sH--)"}
	}

	// The counts need no reading; header captures and the request follow.
	// Captured headers cannot hold '{', '|', '}' or '"' (HAProxy writes
	// them as #7B, #7C, #7D, #22; manual section 8.6) but may hold spaces.
	if i := bytes.IndexAny(rest, "{\""); i >= 0 {
		rest = rest[i:]
		first := true
		for len(rest) > 0 && rest[0] == '{' {
			end := bytes.IndexByte(rest, '}')
			if end < 0 { // a line cut short: the timers are still good
				rest = nil
				break
			}
			if first {
				hdr := rest[1:end]
				if j := bytes.IndexByte(hdr, '|'); j >= 0 {
					hdr = hdr[:j]
				}
				if hapHostName(hdr) {
					f.Host = hdr
				}
				first = false
			}
			rest = bytes.TrimLeft(rest[end+1:], " ")
		}
		if len(rest) > 0 && rest[0] == '"' {
			req := rest[1:]
			// The request is the last field, the only one that may hold
			// quotes (escaped by some syslog daemons); a request too long
			// for the syslog buffer is cut, closing quote included.
			if end := bytes.LastIndexByte(req, '"'); end >= 0 {
				req = req[:end]
			}
			f.Method, f.Path = hapRequestLine(req)
		}
	}

	p.measure(s, &ms, tsc)
	return nil
}

// measure sets the latency, censoring and exclusion of s from the timers
// (TR, Tw, Tc, Tr, Ta in ms, -1 for a phase not completed) and the
// termination state; see haproxyParser for the rules.
func (p *haproxyParser) measure(s *Sample, ms *[5]int64, tsc []byte) {
	if tc := ms[2]; tc >= 0 {
		s.Connect, s.ConnectKnown = time.Duration(tc)*time.Millisecond, true
	}
	cause, phase := tsc[0], tsc[1]
	switch cause {
	case '-', 's', 'c', 'C': // a normal end, a timeout or the client leaving
	default: // S, P, L, R, I, D, U, K and codes unknown to this parser
		s.Excluded = p.reason(cause, phase)
		return
	}
	noServer := phase == 'R' || phase == 'T' // the request never reached a server

	if !p.tr { // Ta
		switch {
		case cause == 'C' && noServer,
			cause == 'c' && (noServer || phase == 'D' || phase == 'L'):
			s.Excluded = p.reason(cause, phase)
			return
		case cause != '-':
			s.Censored = true
		}
		ta := ms[4]
		if ta < 0 { // never logged so; the timers that completed bound it
			ta = max(ms[0], 0) + max(ms[1], 0) + max(ms[2], 0) + max(ms[3], 0)
			s.Censored = true
		}
		s.Latency = time.Duration(ta) * time.Millisecond
		return
	}

	// Tr: complete when measured, whatever happened after the headers.
	if tr := ms[3]; tr >= 0 {
		s.Latency = time.Duration(tr) * time.Millisecond
		return
	}
	if cause == '-' || noServer || phase == 'Q' || phase == 'C' {
		s.Excluded = p.reason(cause, phase)
		return
	}
	// The session ended while waiting for the response headers: the server
	// took at least Ta-(TR+Tw+Tc) (manual section 8.4).
	lb := max(ms[4], 0) - max(ms[0], 0) - max(ms[1], 0) - max(ms[2], 0)
	s.Latency = time.Duration(max(lb, 0)) * time.Millisecond
	s.Censored = true
}

// reason returns the exclusion reason of a termination state, "haproxy XY"
// (or "haproxy Tr -1" for a normal end without a server response time), one
// string per state.
func (p *haproxyParser) reason(cause, phase byte) string {
	k := [2]byte{cause, phase}
	if r, ok := p.reasons[k]; ok {
		return r
	}
	r := "haproxy " + string(k[:])
	if cause == '-' {
		r = "haproxy Tr -1"
	}
	p.reasons[k] = r
	return r
}

// hapTerminationState reports whether b looks like a termination state: two
// (TCP) or four (HTTP) letters or dashes.
func hapTerminationState(b []byte) bool {
	if len(b) != 2 && len(b) != 4 {
		return false
	}
	for _, c := range b {
		if !(c == '-' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// hapToken returns the next space-separated token of b and what follows
// it.
func hapToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	b = b[i:]
	j := bytes.IndexByte(b, ' ')
	if j < 0 {
		return b, nil
	}
	return b[:j], b[j:]
}

// hapFiveParts reports whether tok is five non-empty parts joined by '/'.
func hapFiveParts(tok []byte) bool {
	parts, last := 1, -1
	for i, c := range tok {
		if c == '/' {
			if i == last+1 {
				return false
			}
			parts, last = parts+1, i
		}
	}
	return parts == 5 && last < len(tok)-1
}

// hapMillis reads a timer: "-1" (reported as -1) or a non-negative number
// of milliseconds. On failure it returns one of the reason constants.
func hapMillis(b []byte) (int64, string) {
	if len(b) == 0 {
		return 0, reasonEmpty
	}
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return -1, ""
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, reasonNotNumber
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, reasonNotNumber
		}
		if n > (hapMaxMillis-int64(c-'0'))/10 {
			if neg {
				return 0, reasonNegative
			}
			return 0, reasonRange
		}
		n = n*10 + int64(c-'0')
	}
	if neg && n != 0 {
		return 0, reasonNegative
	}
	return n, ""
}

// hapStatus reads a status code 0-999 of one to three digits.
func hapStatus(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 3 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// hapRequestLine returns the method and target of a request line
// ("GET /x HTTP/1.1"); none for "<BADREQ>", "-" or an empty line.
func hapRequestLine(req []byte) (method, target []byte) {
	method, rest := hapToken(req)
	if len(method) == 0 || method[0] == '<' || (len(method) == 1 && method[0] == '-') {
		return nil, nil
	}
	target, _ = hapToken(rest)
	if len(target) == 1 && target[0] == '-' {
		target = nil
	}
	return method, target
}

// hapHostName reports whether b can only be a host name: letters, digits,
// '.' and '-' with at least one letter and one dot (or "localhost"), not
// starting or ending with '.' or '-', with an optional :port. An IP address
// (which might as well be an X-Forwarded-For), a user agent, a referrer or a
// request id does not pass.
func hapHostName(b []byte) bool {
	if i := bytes.LastIndexByte(b, ':'); i >= 0 {
		port := b[i+1:]
		if len(port) == 0 || len(port) > 5 {
			return false
		}
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
		}
		b = b[:i]
	}
	if len(b) == 0 || len(b) > 253 {
		return false
	}
	if c := b[0]; c == '.' || c == '-' {
		return false
	}
	if c := b[len(b)-1]; c == '.' || c == '-' {
		return false
	}
	letters, dots := 0, 0
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters++
		case c == '.':
			dots++
		case c >= '0' && c <= '9', c == '-':
		default:
			return false
		}
	}
	return letters > 0 && (dots > 0 || string(b) == "localhost")
}

// hapDateAt returns the index of the '[' that opens the request date
// ("[30/Jul/2018:09:03:52"), or -1.
func hapDateAt(line []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(line[off:], '[')
		if i < 0 {
			return -1
		}
		i += off
		if b := line[i:]; len(b) >= 13 && hapDigit(b[1]) && hapDigit(b[2]) && b[3] == '/' && b[7] == '/' &&
			hapDigit(b[8]) && hapDigit(b[9]) && hapDigit(b[10]) && hapDigit(b[11]) && b[12] == ':' {
			return i
		}
		off = i + 1
	}
}

func hapDigit(c byte) bool { return c >= '0' && c <= '9' }

var hapMonths = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// hapParseDate reads "[02/Jan/2006:15:04:05.000]" (milliseconds
// optional) at the start of b as UTC, and returns the bytes it took.
func hapParseDate(b []byte) (t time.Time, n int, ok bool) {
	// [dd/Mon/yyyy:hh:mm:ss
	// 0123456789012345678901
	if len(b) < 22 || b[15] != ':' || b[18] != ':' {
		return t, 0, false
	}
	day, ok1 := hapDigits2(b[1:3])
	year, ok2 := hapDigits4(b[8:12])
	hour, ok3 := hapDigits2(b[13:15])
	minute, ok4 := hapDigits2(b[16:18])
	sec, ok5 := hapDigits2(b[19:21])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return t, 0, false
	}
	month := 0
	for i, m := range hapMonths {
		if string(b[4:7]) == m {
			month = i + 1
			break
		}
	}
	i, nanos := 21, 0
	if b[i] == '.' {
		i++
		scale := int(time.Second)
		for i < len(b) && hapDigit(b[i]) {
			if scale > 1 {
				scale /= 10
				nanos += int(b[i]-'0') * scale
			}
			i++
		}
	}
	if i >= len(b) || b[i] != ']' || !hapValidClock(year, month, day, hour, minute, sec) {
		return t, 0, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC), i + 1, true
}

func hapDigits2(b []byte) (int, bool) {
	if !hapDigit(b[0]) || !hapDigit(b[1]) {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}

func hapDigits4(b []byte) (int, bool) {
	hi, ok1 := hapDigits2(b[:2])
	lo, ok2 := hapDigits2(b[2:4])
	return hi*100 + lo, ok1 && ok2
}

// hapValidClock reports whether the fields name a real date and time (no leap
// second: time.Date would carry it into the next minute).
func hapValidClock(year, month, day, hour, minute, sec int) bool {
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return false
	}
	days := [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month]
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		days = 29
	}
	return day <= days
}
