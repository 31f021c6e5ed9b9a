package haproxy

import (
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/target"
)

// Reading HAProxy configuration: the proxies of an haproxy.cfg as HAProxy
// 2.x reads them. A line is cut into words as parse_line does (src/tools.c:
// "#" comments, \ escapes, "weak" and 'strong' quotes, environment
// variables inside double quotes); a section starts at one of the section
// keywords; a proxy takes its settings from a defaults section: the one
// it names with "from" (2.6), else the last one before it, and a defaults
// section starts from the documented settings, or from the one it names.
//
// What becomes an object: every backend and listen section (the objects
// a timeout or retry policy applies to, as they hold the servers). The
// use_backend rules and default_backend of frontends and listen sections
// become the Matches of the backends they route to, where their ACLs are
// paths, hosts or methods. Frontends' own timeouts (timeout client,
// http-request) bound the client side and are not read.

// Defaults of HAProxy (configuration.txt): retries 3, retry-on
// conn-failure.
const haproxyDefaultRetries = 3

// haproxyMaxTemplate bounds the servers of one server-template line.
const haproxyMaxTemplate = 1 << 20

// haproxyTimeouts are the timeouts HAProxy 2.x knows.
var haproxyTimeouts = map[string]bool{
	"check": true, "client": true, "client-fin": true, "client-hs": true, "connect": true,
	"http-keep-alive": true, "http-request": true, "queue": true, "server": true,
	"server-fin": true, "tarpit": true, "tunnel": true,
}

// haproxyRetryOn are the retry-on keywords of HAProxy 2.6 to 3.x (421 and
// 429 are 3.x only; 2.6 refuses them).
var haproxyRetryOn = map[string]bool{
	"none": true, "conn-failure": true, "empty-response": true, "junk-response": true,
	"response-timeout": true, "0rtt-rejected": true, "all-retryable-errors": true,
	"401": true, "403": true, "404": true, "408": true, "421": true, "425": true, "429": true,
	"500": true, "501": true, "502": true, "503": true, "504": true,
}

// haproxySections are the keywords that start a section.
var haproxySections = map[string]bool{
	"global": true, "defaults": true, "frontend": true, "backend": true, "listen": true,
	"userlist": true, "peers": true, "resolvers": true, "mailers": true, "program": true,
	"http-errors": true, "ring": true, "cache": true, "fcgi-app": true, "log-forward": true,
	"crt-store": true, "traces": true, "acme": true,
}

// ReadConfig reads an HAProxy config file. open is not used:
// HAProxy has no include; a directory given to haproxy -f is read file by
// file, in lexical order, by whoever calls Read.
func ReadConfig(file string, data []byte, _ target.Opener) ([]target.Object, error) {
	lines, err := haproxyLines(file, data)
	if err != nil {
		return nil, err
	}
	secs, err := haproxySplit(file, lines)
	if err != nil {
		return nil, err
	}
	return haproxyObjects(secs)
}

// Detect: a file named *.cfg or haproxy.cfg, or one whose
// first bytes start a global, defaults, frontend, backend or listen
// section at the start of a line.
func Detect(file string, data []byte) bool {
	base := path.Base(filepath.ToSlash(file))
	if base == "haproxy.cfg" || strings.HasSuffix(base, ".cfg") {
		return true
	}
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	return target.LooksHAProxy(head)
}

// --- Words.

// haproxyWord is one word of a line, unquoted and unescaped; env says it
// holds an environment variable, whose value the reader does not know.
type haproxyWord struct {
	value string
	Env   bool
}

type haproxyLine struct {
	words []haproxyWord
	pos   target.Pos
	// cond is the conditional block the line is in whose condition the
	// reader took as true without knowing it; "" for most lines.
	cond string
}

func (l haproxyLine) word(i int) string {
	if i < len(l.words) {
		return l.words[i].value
	}
	return ""
}

func (l haproxyLine) values(from int) []string {
	var out []string
	for i := from; i < len(l.words); i++ {
		out = append(out, l.words[i].value)
	}
	return out
}

// haproxyLines cuts data into lines of words and applies the conditional
// blocks (.if/.elif/.else/.endif). A condition the reader cannot evaluate
// (feature(), defined(), version checks) is taken as true, and the lines
// it governs say so (haproxyLine.cond).
func haproxyLines(file string, data []byte) ([]haproxyLine, error) {
	type level struct {
		active, taken, parentActive, sawElse bool
		cond, unknown                        string
	}
	var out []haproxyLine
	var stack []level
	active := true
	for n, text := range strings.Split(string(data), "\n") {
		pos := target.Pos{File: file, Line: n + 1}
		words, err := Words(strings.TrimSuffix(text, "\r"))
		if err != nil {
			return nil, target.ErrorAt(pos, "%v", err)
		}
		if len(words) == 0 {
			continue
		}
		switch kw := words[0].value; kw {
		case ".if", ".elif", ".else", ".endif":
			cond := strings.Join(Values(words[1:]), " ")
			switch kw {
			case ".if":
				v, known := haproxyCondition(words[1:])
				lv := level{parentActive: active, cond: cond, active: active && v, taken: v}
				if !known && lv.active {
					lv.unknown = fmt.Sprintf(".if %s (%s)", cond, pos)
				}
				stack = append(stack, lv)
			case ".elif", ".else":
				if len(stack) == 0 || stack[len(stack)-1].sawElse {
					return nil, target.ErrorAt(pos, "%q without .if", kw)
				}
				top := &stack[len(stack)-1]
				v, known := true, true
				if kw == ".elif" {
					v, known = haproxyCondition(words[1:])
				} else {
					top.sawElse = true
				}
				top.active = top.parentActive && !top.taken && v
				top.taken = top.taken || v
				top.unknown = ""
				if !known && top.active {
					top.unknown = fmt.Sprintf(".elif %s (%s)", cond, pos)
				}
			case ".endif":
				if len(stack) == 0 {
					return nil, target.ErrorAt(pos, "\".endif\" without .if")
				}
				stack = stack[:len(stack)-1]
			}
			active = len(stack) == 0 || stack[len(stack)-1].active
			continue
		}
		if !active || strings.HasPrefix(words[0].value, ".") {
			continue // .diag, .notice, .warning, .alert, .line
		}
		l := haproxyLine{words: words, pos: pos}
		for i := len(stack) - 1; i >= 0 && l.cond == ""; i-- {
			l.cond = stack[i].unknown
		}
		out = append(out, l)
	}
	if len(stack) > 0 {
		return nil, target.ErrorAt(target.Pos{File: file, Line: strings.Count(string(data), "\n") + 1}, "missing .endif for .if %s", stack[len(stack)-1].cond)
	}
	return out, nil
}

func Values(ws []haproxyWord) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.value
	}
	return out
}

// haproxyCondition evaluates a .if condition where it can: "" and 0 are
// false, another integer true; anything else is not known (true).
func haproxyCondition(ws []haproxyWord) (value, known bool) {
	if len(ws) == 0 {
		return false, true
	}
	if len(ws) == 1 && !ws[0].Env {
		if n, err := strconv.Atoi(ws[0].value); err == nil {
			return n != 0, true
		}
	}
	return true, false
}

// Words cuts one line into words as parse_line does.
func Words(line string) ([]haproxyWord, error) {
	var words []haproxyWord
	var cur strings.Builder
	inWord, env := false, false
	squote, dquote := false, false
	emit := func() {
		if inWord {
			words = append(words, haproxyWord{value: cur.String(), Env: env})
		}
		cur.Reset()
		inWord, env = false, false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '#' && !squote && !dquote:
			i = len(line)
			continue
		case c == '"' && !squote:
			dquote = !dquote
			inWord = true
		case c == '\'' && !dquote:
			squote = !squote
			inWord = true
		case c == '\\' && !squote:
			inWord = true
			last, err := haproxyEscape(line, i, dquote, &cur)
			if err != nil {
				return nil, err
			}
			i = last
		case (c == ' ' || c == '\t') && !squote && !dquote:
			emit()
		case c == '$' && dquote:
			j, err := haproxyVariableEnd(line, i)
			if err != nil {
				return nil, err
			}
			cur.WriteString(line[i:j])
			inWord, env = true, true
			i = j - 1
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if squote || dquote {
		return nil, fmt.Errorf("unmatched quote")
	}
	emit()
	return words, nil
}

// haproxyEscape writes what the backslash at line[i] and the bytes after
// it stand for to cur, and returns the index of the escape's last byte. A
// backslash that escapes nothing stands for itself; \$ is an escaped $
// only inside double quotes.
func haproxyEscape(line string, i int, dquote bool, cur *strings.Builder) (int, error) {
	if i+1 >= len(line) {
		cur.WriteByte('\\')
		return i, nil
	}
	switch n := line[i+1]; n {
	case ' ', '\\', '#', '\'', '"':
		cur.WriteByte(n)
		return i + 1, nil
	case 't':
		cur.WriteByte('\t')
		return i + 1, nil
	case 'n':
		cur.WriteByte('\n')
		return i + 1, nil
	case 'r':
		cur.WriteByte('\r')
		return i + 1, nil
	case '$':
		if dquote {
			cur.WriteByte('$')
			return i + 1, nil
		}
	case 'x':
		if i+3 >= len(line) || !haproxyIsHex(line[i+2]) || !haproxyIsHex(line[i+3]) {
			return 0, fmt.Errorf("truncated or invalid hexadecimal sequence at position %d", i+1)
		}
		v, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
		cur.WriteByte(byte(v))
		return i + 3, nil
	}
	cur.WriteByte('\\')
	return i, nil
}

// haproxyVariableEnd returns the end of the environment variable whose $
// is at line[i], inside double quotes: $NAME, ${NAME}, ${NAME[*]} or
// ${NAME-default}.
func haproxyVariableEnd(line string, i int) (int, error) {
	j := i + 1
	brace := j < len(line) && line[j] == '{'
	if brace {
		j++
	}
	if j >= len(line) || !(haproxyIsAlpha(line[j]) || line[j] == '_' || line[j] == '.') {
		return 0, fmt.Errorf("invalid variable name at position %d", j+1)
	}
	if line[j] == '.' {
		j++
	}
	for j < len(line) && (haproxyIsAlpha(line[j]) || line[j] >= '0' && line[j] <= '9' || line[j] == '_') {
		j++
	}
	if !brace {
		return j, nil
	}
	if strings.HasPrefix(line[j:], "[*]") {
		j += 3
	}
	switch {
	case j < len(line) && line[j] == '-':
		k := strings.IndexByte(line[j:], '}')
		if k < 0 {
			return 0, fmt.Errorf("unmatched brace in variable at position %d", i+1)
		}
		return j + k + 1, nil
	case j < len(line) && line[j] == '}':
		return j + 1, nil
	}
	return 0, fmt.Errorf("unmatched brace in variable at position %d", i+1)
}

func haproxyIsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func haproxyIsAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// --- Time.

// ParseTime parses an HAProxy time as parse_time_err does, in
// milliseconds: digits and an optional unit, us ms s m h d, no unit being
// milliseconds (the unit of every timeout); rounded up to a whole
// millisecond; at most 2147483647 ms (24.8 days). HAProxy 2.6 reads
// "1m30s" as 1m with a warning (later versions refuse it): refused here.
func ParseTime(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("not an HAProxy time (digits and an optional unit: us, ms, s, m, h, d; no unit is milliseconds)")
	}
	if i > 18 {
		return 0, fmt.Errorf("timer overflow (at most 2147483647 ms, about 24.8 days)")
	}
	value, _ := strconv.ParseInt(s[:i], 10, 64)
	var num, den int64 // milliseconds = value * num / den, rounded up
	switch unit := s[i:]; unit {
	case "", "ms":
		num, den = 1, 1
	case "us":
		num, den = 1, 1000
	case "s":
		num, den = 1000, 1
	case "m":
		num, den = 60_000, 1
	case "h":
		num, den = 3_600_000, 1
	case "d":
		num, den = 86_400_000, 1
	default:
		if j := strings.IndexAny(unit, "0123456789"); j > 0 && strings.Contains("us ms s m h d", unit[:j]) {
			return 0, fmt.Errorf("not an HAProxy time: one number and one unit (HAProxy 2.6 reads %q and warns, later versions refuse it)", s[:i+j])
		}
		return 0, fmt.Errorf("not an HAProxy time (digits and an optional unit: us, ms, s, m, h, d; no unit is milliseconds)")
	}
	if value > (1<<62)/num {
		return 0, fmt.Errorf("timer overflow (at most 2147483647 ms, about 24.8 days)")
	}
	ms := (value*num + den - 1) / den
	if ms >= 1<<31 {
		return 0, fmt.Errorf("timer overflow (at most 2147483647 ms, about 24.8 days)")
	}
	return ms, nil
}

// --- Sections.

type haproxySection struct {
	kind, name string
	from       string // the defaults section named with "from"
	pos        target.Pos
	lines      []haproxyLine
}

// haproxySplit groups lines into sections.
func haproxySplit(file string, lines []haproxyLine) ([]*haproxySection, error) {
	var secs []*haproxySection
	var cur *haproxySection
	for _, l := range lines {
		kw := l.word(0)
		if haproxySections[kw] {
			s := &haproxySection{kind: kw, pos: l.pos}
			rest := l.values(1)
			if len(rest) > 0 && kw != "global" {
				s.name = rest[0]
				rest = rest[1:]
			}
			if len(rest) >= 2 && rest[0] == "from" {
				s.from = rest[1]
				rest = rest[2:]
			}
			switch kw {
			case "frontend", "backend", "listen":
				if s.name == "" {
					return nil, target.ErrorAt(l.pos, "%s: a name is missing", kw)
				}
			}
			secs = append(secs, s)
			cur = s
			continue
		}
		if cur == nil {
			return nil, target.ErrorAt(l.pos, "unknown keyword %q out of section", kw)
		}
		cur.lines = append(cur.lines, l)
	}
	return secs, nil
}

// haproxyProxy is the settings of one proxy or defaults section, its
// defaults applied.
type haproxyProxy struct {
	sec       *haproxySection
	settings  map[string]haproxyLine // "timeout server", "retries", "retry-on", "option redispatch", "fullconn", "mode", "default_backend", "default-server"...
	notes     []string
	servers   []haproxyServer
	acls      map[string][]haproxyLine
	rules     []haproxyLine // use_backend
	aclCache  map[string]haproxyACLResult
	disableL7 []target.Pos
}

type haproxyServer struct {
	name       string
	pos        target.Pos
	count      int // server-template makes several
	maxconn    int // 0 = none
	maxconnRaw string
	backup     bool
	disabled   bool
	minconn    bool
	maxqueue   string
}

// haproxyKey is the setting a line sets, "" when the reader does not read
// it; "no option x" sets "option x" off.
func haproxyKey(l haproxyLine) string {
	w := l.values(0)
	switch w[0] {
	case "timeout":
		if len(w) > 1 {
			return "timeout " + w[1]
		}
		return "timeout"
	case "option":
		if len(w) > 1 && w[1] == "redispatch" {
			return "option " + w[1]
		}
	case "no":
		if len(w) > 2 && w[1] == "option" && w[2] == "redispatch" {
			return "option redispatch"
		}
	case "retries", "retry-on", "fullconn", "mode", "default_backend", "default-server":
		return w[0]
	}
	return ""
}

// haproxyCheck refuses a bad value of a setting the reader reads.
func haproxyCheck(l haproxyLine, key string) error {
	w := l.values(0)
	for _, x := range l.words {
		if x.Env {
			return nil // an environment variable: read as not known
		}
	}
	switch {
	case key == "timeout":
		return target.ErrorAt(l.pos, "'timeout' needs a name (server, connect, queue, ...)")
	case strings.HasPrefix(key, "timeout "):
		if !haproxyTimeouts[w[1]] {
			return target.ErrorAt(l.pos, "timeout %q: not a timeout HAProxy knows (client, server, connect, check, queue, http-keep-alive, http-request, tunnel, tarpit, client-fin, server-fin)", w[1])
		}
		if len(w) != 3 {
			return target.ErrorAt(l.pos, "timeout %s: one value expected, got %d", w[1], len(w)-2)
		}
		if _, err := ParseTime(w[2]); err != nil {
			return target.ErrorAt(l.pos, "timeout %s %q: %v", w[1], w[2], err)
		}
	case key == "retries":
		if len(w) != 2 {
			return target.ErrorAt(l.pos, "retries: one value expected")
		}
		if _, err := haproxyNumber(w[1]); err != nil {
			return target.ErrorAt(l.pos, "retries %q: not a number of retries", w[1])
		}
	case key == "retry-on":
		if len(w) < 2 {
			return target.ErrorAt(l.pos, "retry-on: a keyword expected")
		}
		for _, k := range w[1:] {
			if !haproxyRetryOn[k] {
				return target.ErrorAt(l.pos, "retry-on %q: not a retry-on keyword (none, conn-failure, empty-response, junk-response, response-timeout, 0rtt-rejected, all-retryable-errors, or a status: 401 403 404 408 421 425 429 500 501 502 503 504)", k)
			}
		}
	case key == "fullconn":
		if len(w) != 2 {
			return target.ErrorAt(l.pos, "fullconn: one value expected")
		}
		if _, err := haproxyNumber(w[1]); err != nil {
			return target.ErrorAt(l.pos, "fullconn %q: not a number", w[1])
		}
	}
	return nil
}

// haproxyNumber reads a non-negative decimal; HAProxy's atol would take
// "3x" as 3 and "x" as 0: refused here.
func haproxyNumber(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" || len(s) > 9 {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.Atoi(s)
}

// haproxyObjects applies the defaults and builds the objects.
func haproxyObjects(secs []*haproxySection) ([]target.Object, error) {
	named := map[string]*haproxyProxy{}
	var last *haproxyProxy // the last defaults section
	var proxies []*haproxyProxy
	backends := map[string]*haproxyProxy{}
	for _, s := range secs {
		switch s.kind {
		case "defaults", "frontend", "backend", "listen":
		default:
			continue
		}
		var base *haproxyProxy
		switch {
		case s.from != "":
			base = named[s.from]
			if base == nil {
				return nil, target.ErrorAt(s.pos, "%s %s from %s: no defaults section %q before it", s.kind, s.name, s.from, s.from)
			}
		case s.kind != "defaults":
			base = last
		}
		p, err := newHAProxyProxy(s, base)
		if err != nil {
			return nil, err
		}
		if s.kind == "defaults" {
			last = p
			if s.name != "" {
				named[s.name] = p
			}
			continue
		}
		if s.kind != "frontend" {
			if backends[s.name] != nil {
				return nil, target.ErrorAt(s.pos, "%s %s: a backend or listen named %q is already defined at %s", s.kind, s.name, s.name, backends[s.name].sec.pos)
			}
			backends[s.name] = p
		}
		proxies = append(proxies, p)
	}
	routes := haproxyRoutes(proxies, backends)
	var out []target.Object
	for _, p := range proxies {
		if p.sec.kind == "frontend" {
			continue
		}
		o, err := p.object()
		if err != nil {
			return nil, err
		}
		routes[p.sec.name].apply(&o)
		out = append(out, o)
	}
	return out, nil
}

func newHAProxyProxy(s *haproxySection, base *haproxyProxy) (*haproxyProxy, error) {
	p := &haproxyProxy{sec: s, settings: map[string]haproxyLine{}, acls: map[string][]haproxyLine{}}
	if base != nil {
		for k, v := range base.settings {
			p.settings[k] = v
		}
		p.notes = append(p.notes, base.notes...)
		p.disableL7 = append(p.disableL7, base.disableL7...)
	}
	for _, l := range s.lines {
		w := l.values(0)
		switch w[0] {
		case "contimeout", "srvtimeout", "clitimeout":
			return nil, target.ErrorAt(l.pos, "the %q directive is not supported anymore since HAProxy 2.1: use 'timeout %s'", w[0], map[string]string{"contimeout": "connect", "srvtimeout": "server", "clitimeout": "client"}[w[0]])
		case "server", "server-template":
			if s.kind == "defaults" || s.kind == "frontend" {
				continue
			}
			srv, err := p.server(l)
			if err != nil {
				return nil, err
			}
			p.servers = append(p.servers, srv)
			continue
		case "acl":
			if len(w) < 3 {
				return nil, target.ErrorAt(l.pos, "acl: a name and a criterion expected")
			}
			p.acls[w[1]] = append(p.acls[w[1]], l)
			continue
		case "use_backend":
			p.rules = append(p.rules, l)
			continue
		case "http-request":
			if len(w) > 1 && w[1] == "disable-l7-retry" {
				p.disableL7 = append(p.disableL7, l.pos)
			}
			continue
		}
		key := haproxyKey(l)
		if key == "" {
			continue
		}
		if err := haproxyCheck(l, key); err != nil {
			return nil, err
		}
		if l.cond != "" {
			p.notes = append(p.notes, fmt.Sprintf("%s (%s) is inside %s, which the reader cannot evaluate: read as true", key, l.pos, l.cond))
		}
		if key == "default-server" {
			// default-server lines add up; a later one overrides what it
			// sets.
			if prev, ok := p.settings[key]; ok {
				l = haproxyLine{words: append(append([]haproxyWord(nil), prev.words...), l.words[1:]...), pos: l.pos}
			}
		}
		p.settings[key] = l
	}
	return p, nil
}

// server reads a server or server-template line, default-server applied.
func (p *haproxyProxy) server(l haproxyLine) (haproxyServer, error) {
	w := l.values(0)
	s := haproxyServer{pos: l.pos, count: 1}
	params := w
	switch w[0] {
	case "server":
		if len(w) < 3 {
			return s, target.ErrorAt(l.pos, "server: a name and an address expected")
		}
		s.name, params = w[1], w[3:]
	case "server-template":
		if len(w) < 4 {
			return s, target.ErrorAt(l.pos, "server-template: a prefix, a number and an address expected")
		}
		s.name, params = w[1], w[4:]
		n, err := haproxyTemplateCount(w[2])
		if err != nil {
			return s, target.ErrorAt(l.pos, "server-template %s %q: %v", w[1], w[2], err)
		}
		if n > haproxyMaxTemplate {
			return s, target.ErrorAt(l.pos, "server-template %s %q: more than %d servers", w[1], w[2], haproxyMaxTemplate)
		}
		s.count = n
	}
	if ds, ok := p.settings["default-server"]; ok {
		params = append(ds.values(1), params...)
	}
	for i := 0; i < len(params); i++ {
		switch params[i] {
		case "maxconn":
			if i+1 >= len(params) {
				return s, target.ErrorAt(l.pos, "server %s: maxconn needs a value", s.name)
			}
			n, err := haproxyNumber(params[i+1])
			if err != nil {
				return s, target.ErrorAt(l.pos, "server %s: maxconn %q: not a number", s.name, params[i+1])
			}
			s.maxconn, s.maxconnRaw = n, params[i+1]
			i++
		case "maxqueue":
			if i+1 < len(params) {
				s.maxqueue = params[i+1]
				i++
			}
		case "minconn":
			s.minconn = true
			i++
		case "backup":
			s.backup = true
		case "no-backup":
			s.backup = false
		case "disabled":
			s.disabled = true
		case "enabled":
			s.disabled = false
		}
	}
	return s, nil
}

// haproxyTemplateCount reads server-template's <num> or <start>-<end>.
func haproxyTemplateCount(s string) (int, error) {
	lo, hi, rng := strings.Cut(s, "-")
	a, err := haproxyNumber(lo)
	if err != nil {
		return 0, err
	}
	if !rng {
		return a, nil
	}
	b, err := haproxyNumber(hi)
	if err != nil || b < a {
		return 0, fmt.Errorf("not a range")
	}
	return b - a + 1, nil
}

// timeout returns a timeout's setting in seconds, nil when unset; known is
// false when its value is an environment variable.
func (p *haproxyProxy) timeout(name string) (s *target.Setting[float64], known bool) {
	l, ok := p.settings["timeout "+name]
	if !ok {
		return nil, true
	}
	if len(l.words) < 3 || l.words[2].Env {
		return nil, false
	}
	ms, _ := ParseTime(l.word(2))
	return target.Set(float64(ms)/1000, l.pos, l.word(2)), true
}

// object builds the object of a backend or listen section.
func (p *haproxyProxy) object() (target.Object, error) {
	s := p.sec
	o := target.Object{Target: "haproxy", Kind: s.kind, Name: s.kind + " " + s.name, Pos: s.pos, TimeoutIdle: true, Jitter: "none"}
	o.Notes = append(o.Notes, p.notes...)
	p.timeouts(&o)
	conds := p.retries(&o)
	p.resends(&o, conds)
	p.retryNotes(&o)
	p.serverLimit(&o)
	return o, nil
}

// envNote says that a setting's value is an environment variable, which
// the reader does not read.
func (p *haproxyProxy) envNote(o *target.Object, what string) {
	l := p.settings[what]
	o.Notes = append(o.Notes, fmt.Sprintf("%s %s (%s) is an environment variable: not read", what, l.word(len(l.words)-1), l.pos))
}

// timeouts reads timeout server, connect and queue (the connect's unless
// set), and notes the timeouts that bound something else: tunnel,
// http-request, http-keep-alive.
func (p *haproxyProxy) timeouts(o *target.Object) {
	var known bool
	if o.Timeout, known = p.timeout("server"); known {
		o.Timeout = target.Keyed(o.Timeout, "timeout server")
	}
	if !known {
		p.envNote(o, "timeout server")
	} else if o.Timeout == nil {
		o.Notes = append(o.Notes, "no timeout server: HAProxy waits forever and warns at startup")
	}
	if o.ConnectTimeout, known = p.timeout("connect"); known {
		o.ConnectTimeout = target.Keyed(o.ConnectTimeout, "timeout connect")
	}
	if !known {
		p.envNote(o, "timeout connect")
	} else if o.ConnectTimeout == nil {
		o.Notes = append(o.Notes, "no timeout connect: a connect waits as long as the kernel lets it, and HAProxy warns at startup")
	}
	if o.QueueTimeout, known = p.timeout("queue"); !known {
		p.envNote(o, "timeout queue")
	} else if o.QueueTimeout == nil && o.ConnectTimeout != nil {
		// HAProxy: "If unspecified, the same value as the backend's
		// connection timeout".
		o.QueueTimeout = target.Defaulted(o.ConnectTimeout.Value, p.sec.pos)
	}
	for _, t := range []struct{ name, why string }{
		{"tunnel", "bounds the idle time of a tunnel (WebSocket, CONNECT) once established, instead of timeout server"},
		{"http-request", "bounds the wait for a complete request from the client"},
		{"http-keep-alive", "bounds the wait for the next request on a kept-alive client connection"},
	} {
		if l, ok := p.settings["timeout "+t.name]; ok {
			o.Notes = append(o.Notes, fmt.Sprintf("timeout %s %s (%s) %s", t.name, l.word(2), l.pos, t.why))
		}
	}
}

// retries reads the attempts (retries + 1; retries 3 unless set, 1 with
// retry-on none) and retry-on (conn-failure unless set). conds are the
// retry-on conditions, nil when retry-on is an environment variable.
func (p *haproxyProxy) retries(o *target.Object) (conds []string) {
	s := p.sec
	retries := haproxyDefaultRetries
	if l, ok := p.settings["retries"]; ok && !l.words[1].Env {
		retries, _ = haproxyNumber(l.word(1))
		o.Attempts = target.Set(retries+1, l.pos, l.word(1))
	} else if ok {
		p.envNote(o, "retries")
	} else {
		o.Attempts = target.Defaulted(retries+1, s.pos)
	}
	conds = []string{"conn-failure"}
	if l, ok := p.settings["retry-on"]; ok {
		if l.words[1].Env {
			p.envNote(o, "retry-on")
			conds = nil
		} else {
			conds = l.values(1)
			if slices.Contains(conds, "none") {
				conds = []string{}
				o.Attempts = target.Set(1, l.pos, "none")
			}
			o.RetryOn = target.Set(conds, l.pos, strings.Join(l.values(1), " "))
		}
	} else {
		o.RetryOn = target.Defaulted(conds, s.pos)
	}
	return conds
}

// resends reads whether a retry may resend a request the server received
// (RetryNonIdempotent): every condition but a failed connect (and early
// data the server refused) may, whatever the request's method. It notes
// where such a retry does not happen: outside mode http, or where
// http-request disable-l7-retry may turn it off.
func (p *haproxyProxy) resends(o *target.Object, conds []string) {
	if o.RetryOn == nil {
		return
	}
	l7 := []string{}
	for _, c := range conds {
		if c != "conn-failure" && c != "0rtt-rejected" {
			l7 = append(l7, c)
		}
	}
	switch {
	case o.RetryOn.Default:
		o.RetryNonIdempotent = target.Defaulted(false, p.sec.pos)
	default:
		o.RetryNonIdempotent = target.Set(len(l7) > 0, o.RetryOn.Pos, o.RetryOn.Raw)
	}
	mode := "tcp"
	if l, ok := p.settings["mode"]; ok {
		mode = l.word(1)
	}
	if len(l7) > 0 && mode != "http" {
		o.Notes = append(o.Notes, fmt.Sprintf("retry-on %s: HAProxy ignores retry-on outside mode http", strings.Join(l7, " ")))
	}
	if len(l7) > 0 && len(p.disableL7) > 0 {
		o.Notes = append(o.Notes, fmt.Sprintf("http-request disable-l7-retry (%s): some requests are not retried but on a failed connect; its condition is not read", p.disableL7[0]))
	}
}

// retryNotes notes where a retry goes (option redispatch) and when it
// waits (after a failed connect).
func (p *haproxyProxy) retryNotes(o *target.Object) {
	if l, ok := p.settings["option redispatch"]; ok && l.word(0) == "option" {
		every := "the last retry"
		if len(l.words) > 2 {
			every = fmt.Sprintf("retries as %s says", l.word(2))
			if l.word(2) == "0" {
				every = ""
			}
		}
		if every != "" {
			o.Notes = append(o.Notes, fmt.Sprintf("option redispatch (%s): %s may go to another server", l.pos, every))
		}
	}
	if o.Attempts != nil && o.Attempts.Value > 1 && o.ConnectTimeout != nil {
		o.Notes = append(o.Notes, "a retry after a failed connect to the same server waits min(timeout connect, 1s) first; other retries go at once")
	}
}

// serverLimit reads the most requests in flight, the sum of maxconn of
// the active servers (backups take traffic only when they are all down;
// fullconn only scales minconn up to maxconn), and notes backups,
// maxqueue and minconn.
func (p *haproxyProxy) serverLimit(o *target.Object) {
	sum, all, active := 0, true, 0
	var raws []string
	backups, queues := 0, []string{}
	minconn := false
	for _, srv := range p.servers {
		if srv.disabled {
			continue
		}
		if srv.backup {
			backups += srv.count
			continue
		}
		active += srv.count
		minconn = minconn || srv.minconn
		if srv.maxqueue != "" && srv.maxqueue != "0" {
			queues = append(queues, srv.name+" "+srv.maxqueue)
		}
		if srv.maxconn == 0 {
			all = false
			continue
		}
		sum += srv.maxconn * srv.count
		if srv.count == 1 {
			raws = append(raws, srv.maxconnRaw)
		} else {
			raws = append(raws, fmt.Sprintf("%sx%d", srv.maxconnRaw, srv.count))
		}
	}
	switch {
	case active == 0:
		o.Notes = append(o.Notes, "no active server")
	case all && sum > math.MaxInt32:
		o.Notes = append(o.Notes, fmt.Sprintf("maxconn of the servers adds up to %d: read as no limit", sum))
	case all:
		o.MaxInFlight = &target.Setting[int]{Value: sum, Pos: p.sec.pos, Raw: "maxconn " + strings.Join(raws, "+")}
	case sum > 0:
		o.Notes = append(o.Notes, "maxconn on some servers only: no limit over the backend")
	}
	if backups > 0 {
		o.Notes = append(o.Notes, fmt.Sprintf("%s: used only when no active server is up", human.Plural(int64(backups), "backup server")))
	}
	if len(queues) > 0 {
		o.Notes = append(o.Notes, "maxqueue "+strings.Join(queues, ", ")+": a request beyond maxconn and maxqueue goes to another server or fails")
	}
	if l, ok := p.settings["fullconn"]; ok && minconn {
		o.Notes = append(o.Notes, fmt.Sprintf("minconn with fullconn %s (%s): below %s connections to the backend a server takes fewer than its maxconn", l.word(1), l.pos, l.word(1)))
	}
}

// --- Routing: frontends' use_backend rules as matches.

// haproxyMethodACLs are HAProxy's pre-defined method ACLs (configuration.txt,
// 7.4 "Pre-defined ACLs"): METH_GET is "method GET HEAD".
var haproxyMethodACLs = map[string][]string{
	"METH_CONNECT": {"CONNECT"}, "METH_DELETE": {"DELETE"}, "METH_GET": {"GET", "HEAD"},
	"METH_HEAD": {"HEAD"}, "METH_OPTIONS": {"OPTIONS"}, "METH_POST": {"POST"},
	"METH_PUT": {"PUT"}, "METH_TRACE": {"TRACE"},
}

// haproxyRoute collects the rules that reach one backend: each a set of
// matches that all hold, the rules alternatives, numbered in the order
// HAProxy evaluates them.
type haproxyRoute struct {
	groups    [][]target.Match
	routers   []string // the frontends and listen sections the rules are in
	catchAll  []string // "default_backend of frontend x"
	unmodeled []string
	notes     []string
}

// apply gives a backend the rules that reach it as Matches, each with its
// Rule number, and the frontend they are in as its Router: HAProxy takes
// the first use_backend rule whose condition holds, in the order of the
// frontend, and the default_backend when none does (configuration.txt,
// "use_backend": "the first rule matching is used"; "default_backend":
// "used when no use_backend rule has been matched"). A use_backend
// without a condition, or the default_backend, is a rule that matches
// every path, at its place in that order. A backend reached from several
// frontends competes with none of their other backends (Router ""): it
// serves every request its own rules select.
func (r *haproxyRoute) apply(o *target.Object) {
	if r == nil {
		return
	}
	if len(r.catchAll) > 0 {
		o.Notes = append(o.Notes, "takes the requests no use_backend rule before it takes: "+strings.Join(r.catchAll, ", "))
	}
	if len(r.unmodeled) == 0 {
		for _, g := range r.groups {
			o.Matches = append(o.Matches, g...)
		}
		if routers := slices.Compact(slices.Sorted(slices.Values(r.routers))); len(routers) == 1 {
			o.Router = routers[0]
		}
	}
	o.Notes = append(o.Notes, r.unmodeled...)
	o.Notes = append(o.Notes, r.notes...)
}

// haproxyRoutes reads the use_backend rules and default_backend of every
// frontend and listen section, numbering the rules (Match.Rule) in the
// order HAProxy tries them: each section's use_backend lines in order,
// each alternative of a condition (||) a rule of its own, then its
// default_backend.
func haproxyRoutes(proxies []*haproxyProxy, backends map[string]*haproxyProxy) map[string]*haproxyRoute {
	routes := map[string]*haproxyRoute{}
	route := func(name string) *haproxyRoute {
		if routes[name] == nil {
			routes[name] = &haproxyRoute{}
		}
		return routes[name]
	}
	rule := 0
	every := []target.Match{{Kind: target.MatchPrefix, Value: "/"}}
	add := func(r *haproxyRoute, where string, ms []target.Match) {
		rule++
		if len(ms) == 0 {
			ms = every // "if TRUE"
		}
		g := make([]target.Match, len(ms))
		for i, m := range ms {
			m.Rule = rule
			g[i] = m
		}
		r.groups = append(r.groups, g)
		r.routers = append(r.routers, where)
	}
	for _, p := range proxies {
		if p.sec.kind == "backend" {
			continue
		}
		where := p.sec.kind + " " + p.sec.name
		// After a rule whose condition is not read, which requests reach
		// a rule that takes every request is not known: it gets no match.
		blind := false
		catchAll := func(r *haproxyRoute, what string) {
			r.catchAll = append(r.catchAll, what)
			if blind {
				r.notes = append(r.notes, what+": after a use_backend rule not read as matches, the requests it takes are not known")
				return
			}
			add(r, where, every)
		}
		for _, l := range p.rules {
			w := l.values(0)
			if len(w) < 2 {
				continue
			}
			be := w[1]
			if backends[be] == nil {
				// A dynamic name (%[...]) or a backend elsewhere takes
				// requests this reader does not follow.
				blind = true
				continue
			}
			r := route(be)
			if len(w) == 2 {
				catchAll(r, fmt.Sprintf("use_backend %s without a condition in %s (%s)", be, where, l.pos))
				continue
			}
			groups, why := p.condition(w[2:])
			if why != "" {
				r.unmodeled = append(r.unmodeled, fmt.Sprintf("use_backend in %s (%s): %s: not read as matches", where, l.pos, why))
				blind = true
				continue
			}
			for _, g := range groups {
				add(r, where, g)
			}
		}
		if l, ok := p.settings["default_backend"]; ok && backends[l.word(1)] != nil {
			catchAll(route(l.word(1)), fmt.Sprintf("default_backend of %s (%s)", where, l.pos))
		}
	}
	return routes
}

// condition reads "if <cond>" of a use_backend rule as alternatives of
// matches (terms joined by || or "or", each a conjunction of ACLs);
// why says what it could not read.
func (p *haproxyProxy) condition(w []string) (groups [][]target.Match, why string) {
	if w[0] == "unless" {
		return nil, "an unless condition"
	}
	if w[0] != "if" {
		return nil, fmt.Sprintf("%q where if or unless is expected", w[0])
	}
	var terms [][]string // one AND-group per alternative
	cur := []string{}
	for i := 1; i < len(w); i++ {
		switch w[i] {
		case "||", "or":
			terms = append(terms, cur)
			cur = []string{}
		case "{":
			j := slices.Index(w[i:], "}")
			if j < 0 {
				return nil, "an anonymous ACL without a closing brace"
			}
			cur = append(cur, "\x00"+strings.Join(w[i+1:i+j], "\x00"))
			i += j
		default:
			cur = append(cur, w[i])
		}
	}
	terms = append(terms, cur)
	for _, and := range terms {
		var group []target.Match
		never := false
		for _, t := range and {
			var ms []target.Match
			var why string
			switch {
			case strings.HasPrefix(t, "\x00"):
				ms, why = haproxyACL(strings.Split(t[1:], "\x00"))
			case strings.HasPrefix(t, "!"):
				return nil, fmt.Sprintf("the negated ACL %s", t)
			case t == "TRUE":
				continue
			case t == "FALSE":
				never = true
				continue
			case haproxyMethodACLs[t] != nil:
				for _, m := range haproxyMethodACLs[t] {
					ms = append(ms, target.Match{Kind: target.MatchMethod, Value: m})
				}
			default:
				ms, why = p.namedACL(t)
			}
			if why != "" {
				return nil, why
			}
			// One term: its matches are alternatives, so of one kind.
			for _, m := range ms[1:] {
				if m.Kind != ms[0].Kind {
					return nil, fmt.Sprintf("%s matches both %s and %s", strings.ReplaceAll(t, "\x00", " "), ms[0].Kind, m.Kind)
				}
			}
			if len(ms) > 0 && target.HasMatchKind(group, ms[0].Kind) {
				return nil, fmt.Sprintf("two %s conditions that must both hold", ms[0].Kind)
			}
			group = append(group, ms...)
		}
		if !never {
			groups = append(groups, group)
		}
	}
	return groups, ""
}

// namedACL reads the lines of a named ACL as alternatives, once per
// proxy.
func (p *haproxyProxy) namedACL(name string) ([]target.Match, string) {
	if r, ok := p.aclCache[name]; ok {
		return r.matches, r.why
	}
	var ms []target.Match
	why := ""
	lines := p.acls[name]
	if len(lines) == 0 {
		why = fmt.Sprintf("the ACL %s, which is not defined here", name)
	}
	for _, l := range lines {
		m, w := haproxyACL(l.values(2))
		if w != "" {
			ms, why = nil, fmt.Sprintf("the ACL %s (%s): %s", name, l.pos, w)
			break
		}
		ms = append(ms, m...)
	}
	if p.aclCache == nil {
		p.aclCache = map[string]haproxyACLResult{}
	}
	p.aclCache[name] = haproxyACLResult{ms, why}
	return ms, why
}

type haproxyACLResult struct {
	matches []target.Match
	why     string
}

// haproxyACL reads an ACL's criterion, flags and values as matches.
func haproxyACL(w []string) ([]target.Match, string) {
	if len(w) == 0 {
		return nil, "an empty ACL"
	}
	crit := strings.ToLower(w[0])
	method, ci := "", false
	var values []string
	i := 1
	for ; i < len(w); i++ {
		switch f := w[i]; {
		case f == "-i":
			ci = true
		case f == "-m" && i+1 < len(w):
			method = w[i+1]
			i++
		case f == "-f":
			return nil, "values from a file"
		case f == "-u" || f == "-M":
			if f == "-u" {
				i++
			}
		case f == "-n":
		case f == "--":
			i++
			values = append(values, w[i:]...)
			i = len(w)
		default:
			values = append(values, w[i:]...)
			i = len(w)
		}
	}
	kind := ""
	switch crit {
	case "path":
		kind = map[string]string{"": target.MatchExact, "str": target.MatchExact, "beg": target.MatchPrefix, "reg": target.MatchRegex}[method]
	case "path_beg":
		kind = map[string]string{"": target.MatchPrefix, "beg": target.MatchPrefix}[method]
	case "path_reg":
		kind = map[string]string{"": target.MatchRegex, "reg": target.MatchRegex}[method]
	case "hdr(host)", "req.hdr(host)", "hdr(host,-1)", "req.hdr(host,-1)":
		kind = map[string]string{"": target.MatchHost, "str": target.MatchHost}[method]
		ci = true
	case "method":
		kind = map[string]string{"": target.MatchMethod, "str": target.MatchMethod}[method]
	}
	if kind == "" {
		return nil, fmt.Sprintf("the criterion %s%s", w[0], map[bool]string{true: " -m " + method}[method != ""])
	}
	if len(values) == 0 {
		return nil, fmt.Sprintf("%s without a value", w[0])
	}
	out := make([]target.Match, len(values))
	for j, v := range values {
		if kind == target.MatchHost {
			v = strings.ToLower(v)
		}
		out[j] = target.Match{Kind: kind, Value: v, CaseInsensitive: ci && kind != target.MatchHost && kind != target.MatchMethod}
	}
	return out, ""
}
