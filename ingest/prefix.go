package ingest

import "bytes"

// Prefixes that log pipelines put before a server's own line. Every line
// format reads its lines behind them, in one place: the shared line decoder
// (lines.go) strips them before the format's parser sees the line, and
// auto-detection (format.go) tries each line without them too.
//
// The grammar (SP is one space; a prefix ends where the server's line
// begins, and prefixes stack, in any order, at most maxPrefixes of them):
//
//	prefix     = timestamp / pod / compose / otel-body / syslog
//	timestamp  = date-time SP
//	             ; kubectl logs --timestamps, docker logs -t, docker compose logs -t:
//	             ; 2020-11-25T21:26:18.409123456Z (RFC 3339: fraction optional,
//	             ; "Z" or an offset like +01:00)
//	pod        = "[pod/" name "/" name "]" SP
//	             ; kubectl logs --prefix: [pod/web-7d4b9c8f5-x2x9q/nginx]
//	compose    = [sgr] name 1*SP "|" [sgr] (SP / end of line)
//	             ; docker compose logs: "caddy-1  | ", the name padded to the widest
//	             ; service; sgr = ESC "[" *(DIGIT / ";") "m", the colours of a terminal
//	otel-body  = "Body: " ["Str(" ... ")"]
//	             ; the OpenTelemetry collector's debug (logging) exporter; the ")" that
//	             ; closes Str( at the end of the line goes too
//	syslog     = "<" 1*3DIGIT ">" "1" SP date-time-or-dash SP 4(token SP) sd [SP]
//	             ; RFC 5424: <134>1 2026-11-29T10:00:00Z host app 123 - - (sd is "-"
//	             ; or [structured data] whose first SD-ID starts with a letter)
//	           / ["<" 1*3DIGIT ">"] rfc3164-time SP [host SP] tag SP
//	             ; RFC 3164: <190>Nov 29 16:02:18 host nginx: , and as rsyslog writes
//	             ; files: Nov 29 16:02:18 host nginx: (rfc3164-time = Mmm SP dd SP
//	             ; hh:mm:ss, dd space-padded)
//	           / ["<" 1*3DIGIT ">"] date-time SP host SP tag SP
//	             ; rsyslog's RFC 3339 file format: 2026-11-29T16:02:18.123+00:00 host nginx:
//	name       = 1*(ALPHA / DIGIT / "." / "_" / "-")   ; at most 128 bytes
//	host       = 1*(ALPHA / DIGIT / "." / "_" / "-" / ":")
//	tag        = 1*(ALPHA / DIGIT / "." / "_" / "-" / "/") ["[" 1*DIGIT "]"] ":"
//	             ; nginx:, haproxy[27436]:
//
// What is not stripped: a prefix the format reads itself (HAProxy finds its
// request date behind any syslog header, so its parser opts out of the
// syslog rule, see haproxyParser), and nothing that starts a line of any
// format: no prefix starts with '{' (a JSON line) or with '[' and a digit
// (Envoy's [START_TIME]). A line that does start like a prefix (an nginx
// log_format that begins with $time_iso8601) is still read as it is: the
// line decoder tries the line without its prefixes and as it stands, in the
// order the input's first line settled (see lineDecoder.stripFirst).

// prefixRules is a set of the prefixes above.
type prefixRules uint8

const (
	prefixTimestamp prefixRules = 1 << iota // kubectl logs --timestamps
	prefixPod                               // kubectl logs --prefix
	prefixCompose                           // docker compose logs
	prefixOTel                              // the OpenTelemetry collector's Body:
	prefixSyslog                            // RFC 3164 and RFC 5424 headers

	allPrefixes = prefixTimestamp | prefixPod | prefixCompose | prefixOTel | prefixSyslog
)

// maxPrefixes is how many prefixes stripPrefixes takes off one line.
const maxPrefixes = 4

// maxPrefixName is the longest name of a compose service or pod accepted.
const maxPrefixName = 128

// prefixOwner is implemented by the LineParsers that read some of the
// prefixes themselves: the line decoder leaves those to them.
type prefixOwner interface {
	ownPrefixes() prefixRules
}

// stripPrefixes returns line without the prefixes of rules it starts with.
// It allocates nothing and returns line itself when there is none.
func stripPrefixes(line []byte, rules prefixRules) []byte {
	for range maxPrefixes {
		start, end := prefixAt(line, rules)
		if start == 0 && end == 0 {
			break
		}
		line = line[start : len(line)-end]
	}
	return line
}

// prefixAt returns how many bytes the prefix at the start of b takes, and
// how many at its end go with it (the ")" of the collector's Str(...)); 0,
// 0 when b starts with no prefix of rules.
func prefixAt(b []byte, rules prefixRules) (start, end int) {
	if len(b) < 3 {
		return 0, 0
	}
	switch c := b[0]; {
	case c == '{': // a JSON line
		return 0, 0
	case c == '<':
		if rules&prefixSyslog != 0 {
			return syslogPrefix(b), 0
		}
		return 0, 0
	case c == '[':
		if rules&prefixPod != 0 {
			return podPrefix(b), 0
		}
		return 0, 0
	case c >= '0' && c <= '9':
		if n := rfc3339Len(b); n > 0 {
			if n < len(b) && b[n] == ' ' {
				if rules&prefixSyslog != 0 {
					if m := syslogHostTag(b[n+1:], true); m > 0 {
						return n + 1 + m, 0
					}
				}
				if rules&prefixTimestamp != 0 {
					return n + 1, 0
				}
			}
			return 0, 0
		}
	case c == 'B':
		if rules&prefixOTel != 0 && bytes.HasPrefix(b, otelBody) {
			rest := b[len(otelBody):]
			if bytes.HasPrefix(rest, otelStr) && rest[len(rest)-1] == ')' {
				return len(otelBody) + len(otelStr), 1
			}
			return len(otelBody), 0
		}
	}
	if rules&prefixSyslog != 0 && b[0] >= 'A' && b[0] <= 'S' {
		if n := rfc3164Len(b); n > 0 {
			if m := syslogHostTag(b[n:], false); m > 0 {
				return n + m, 0
			}
		}
	}
	if rules&prefixCompose != 0 {
		return composePrefix(b), 0
	}
	return 0, 0
}

var (
	otelBody = []byte("Body: ")
	otelStr  = []byte("Str(")
)

// pfxNameByte reports whether c may be part of a compose service or pod name.
func pfxNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// pfxNameLen returns the length of the name b starts with (0 when none or
// longer than maxPrefixName).
func pfxNameLen(b []byte) int {
	i := 0
	for i < len(b) && pfxNameByte(b[i]) {
		if i++; i > maxPrefixName {
			return 0
		}
	}
	return i
}

// pfxSGRLen returns the length of the terminal colour sequence (ESC [ ... m)
// b starts with, or 0.
func pfxSGRLen(b []byte) int {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b) && i < 16; i++ {
		switch c := b[i]; {
		case c == 'm':
			return i + 1
		case c != ';' && (c < '0' || c > '9'):
			return 0
		}
	}
	return 0
}

// composePrefix returns the length of a docker compose prefix "name  | ".
func composePrefix(b []byte) int {
	i := pfxSGRLen(b)
	n := pfxNameLen(b[i:])
	if n == 0 {
		return 0
	}
	i += n
	spaces := 0
	for i < len(b) && b[i] == ' ' {
		i, spaces = i+1, spaces+1
	}
	if spaces == 0 || i >= len(b) || b[i] != '|' {
		return 0
	}
	i++
	i += pfxSGRLen(b[i:])
	switch {
	case i == len(b):
		return i
	case b[i] == ' ':
		return i + 1
	}
	return 0
}

// podPrefix returns the length of kubectl's "[pod/NAME/CONTAINER] ".
func podPrefix(b []byte) int {
	if !bytes.HasPrefix(b, []byte("[pod/")) {
		return 0
	}
	i := len("[pod/")
	n := pfxNameLen(b[i:])
	if n == 0 || i+n >= len(b) || b[i+n] != '/' {
		return 0
	}
	i += n + 1
	n = pfxNameLen(b[i:])
	if n == 0 || i+n+1 >= len(b) || b[i+n] != ']' || b[i+n+1] != ' ' {
		return 0
	}
	return i + n + 2
}

// rfc3339Len returns the length of the RFC 3339 date-time b starts with
// (2020-11-25T21:26:18.409123456Z, 2026-11-29T16:02:18+01:00), or 0.
func rfc3339Len(b []byte) int {
	// 2020-11-25T21:26:18
	// 0123456789012345678
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't') || b[13] != ':' || b[16] != ':' {
		return 0
	}
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		if b[i] < '0' || b[i] > '9' {
			return 0
		}
	}
	i := 19
	if b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start || i >= len(b) {
			return 0
		}
	}
	switch b[i] {
	case 'Z', 'z':
		return i + 1
	case '+', '-':
		if z := b[i:]; len(z) >= 6 && z[3] == ':' && pfxDigit(z[1]) && pfxDigit(z[2]) && pfxDigit(z[4]) && pfxDigit(z[5]) {
			return i + 6
		}
	}
	return 0
}

func pfxDigit(c byte) bool { return c >= '0' && c <= '9' }

// rfc3164Len returns the length of an RFC 3164 time and the space after it
// ("Nov 29 16:02:18 ", "Feb  6 12:14:14 "), or 0.
func rfc3164Len(b []byte) int {
	// Nov 29 16:02:18 _
	// 0123456789012345
	if len(b) < 16 || b[3] != ' ' || b[6] != ' ' || b[9] != ':' || b[12] != ':' || b[15] != ' ' {
		return 0
	}
	month := false
	for _, m := range clfMonths {
		if string(b[:3]) == m {
			month = true
			break
		}
	}
	if !month || !(b[4] == ' ' || pfxDigit(b[4])) || !pfxDigit(b[5]) {
		return 0
	}
	for _, i := range [...]int{7, 8, 10, 11, 13, 14} {
		if !pfxDigit(b[i]) {
			return 0
		}
	}
	return 16
}

// syslogHostTag returns the length of "[host ]tag: " at the start of b
// (the host is required when needHost), or 0. A host is letters, digits
// and ".-_:" (an IPv6 address); a tag is letters, digits and "._/-", an
// optional "[pid]", and ":" ("nginx:", "haproxy[27436]:"). Nothing else
// passes: a JSON value or a bracket after a time is not a syslog header.
func syslogHostTag(b []byte, needHost bool) int {
	if !needHost {
		if n := syslogTagLen(b); n > 0 {
			return n
		}
	}
	i := 0
	for i < len(b) && i < 256 && (pfxNameByte(b[i]) || b[i] == ':') {
		i++
	}
	if i == 0 || i >= len(b) || b[i] != ' ' {
		return 0
	}
	if n := syslogTagLen(b[i+1:]); n > 0 {
		return i + 1 + n
	}
	return 0
}

// syslogTagLen returns the length of a tag and the space after it.
func syslogTagLen(b []byte) int {
	i := 0
	for i < len(b) && i < 128 && (pfxNameByte(b[i]) || b[i] == '/') {
		i++
	}
	if i == 0 || i >= len(b) {
		return 0
	}
	if b[i] == '[' {
		j := i + 1
		for j < len(b) && pfxDigit(b[j]) {
			j++
		}
		if j == i+1 || j >= len(b) || b[j] != ']' {
			return 0
		}
		i = j + 1
	}
	if i+1 < len(b) && b[i] == ':' && b[i+1] == ' ' {
		return i + 2
	}
	return 0
}

// syslogToken returns the token b starts with (up to a space, at most 255
// bytes, at least one) and its length with the one space after it; 0 when
// b does not start with such a token followed by a space.
func syslogToken(b []byte) ([]byte, int) {
	for i := 0; i < len(b) && i < 256; i++ {
		switch c := b[i]; {
		case c == ' ':
			if i == 0 {
				return nil, 0
			}
			return b[:i], i + 1
		case c < '!' || c > '~':
			return nil, 0
		}
	}
	return nil, 0
}

// syslogPrefix returns the length of a syslog header with its <PRI>, or 0.
func syslogPrefix(b []byte) int {
	i := 1
	for i < len(b) && i <= 4 && pfxDigit(b[i]) {
		i++
	}
	if i == 1 || i > 4 || i >= len(b) || b[i] != '>' {
		return 0
	}
	pri := i + 1
	rest := b[pri:]
	switch {
	case len(rest) > 2 && rest[0] == '1' && rest[1] == ' ': // RFC 5424
		if n := rfc5424Len(rest[2:]); n > 0 {
			return pri + 2 + n
		}
	case len(rest) > 0 && pfxDigit(rest[0]):
		if n := rfc3339Len(rest); n > 0 && n < len(rest) && rest[n] == ' ' {
			if m := syslogHostTag(rest[n+1:], true); m > 0 {
				return pri + n + 1 + m
			}
		}
	default:
		if n := rfc3164Len(rest); n > 0 {
			if m := syslogHostTag(rest[n:], false); m > 0 {
				return pri + n + m
			}
		}
	}
	return 0
}

// rfc5424Len returns the length of what follows "<PRI>1 " in an RFC 5424
// header: TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA and the
// space before the message (and a UTF-8 BOM), or 0.
func rfc5424Len(b []byte) int {
	// The time is "-" or RFC 3339; no field starts with '{' or '[' (a JSON
	// line, Envoy's [START_TIME]).
	i := 0
	for k := range 5 {
		tok, n := syslogToken(b[i:])
		switch {
		case n == 0 || tok[0] == '{' || tok[0] == '[':
			return 0
		case k == 0 && !(len(tok) == 1 && tok[0] == '-') && rfc3339Len(tok) != len(tok):
			return 0
		}
		i += n
	}
	// STRUCTURED-DATA: "-" or one or more [id param="value" ...] elements,
	// where a value may hold \" and \].
	switch {
	case i < len(b) && b[i] == '-':
		i++
	case i+1 < len(b) && b[i] == '[' && isASCIILetter(b[i+1]): // an SD-ID; "[2" starts Envoy's line
		for i < len(b) && b[i] == '[' {
			quoted := false
			j := i + 1
			for ; j < len(b); j++ {
				c := b[j]
				if c == '\\' && quoted {
					j++
					continue
				}
				if c == '"' {
					quoted = !quoted
				}
				if c == ']' && !quoted {
					break
				}
			}
			if j >= len(b) {
				return 0
			}
			i = j + 1
		}
	default:
		return 0
	}
	if i < len(b) {
		if b[i] != ' ' {
			return 0
		}
		i++
	}
	if bytes.HasPrefix(b[i:], utf8BOM) {
		i += len(utf8BOM)
	}
	return i
}

// shapeBehindPrefixes returns shape's answer for line as it stands, or else
// for line without its prefixes: the built-in formats an input is
// recognised by are recognised behind a kubectl timestamp or a syslog
// header as detection recognises them.
func shapeBehindPrefixes(line []byte, shape func([]byte) string) string {
	if s := shape(line); s != "" {
		return s
	}
	return shape(stripPrefixes(line, allPrefixes))
}
