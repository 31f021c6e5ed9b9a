package nginx

import (
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/nginxconf"
	"github.com/tunetimeout/tunetimeout/target"
)

// Reading nginx configuration: the http context of an nginx.conf (or of a
// file it includes, such as a conf.d/*.conf or sites-enabled/* file) as
// nginx itself reads it. The tokenizer and the includes are
// internal/nginxconf's (ngx_conf_read_token and ngx_conf_include, with
// its bounds on includes); time values are parsed as
// ngx_parse_time does; proxy_* and grpc_* settings are inherited http ->
// server -> location -> nested location as the modules' merge functions
// do; tries are counted as the round-robin balancer counts them.
//
// What becomes an object: every location (or "if"/"limit_except" block in
// one) that proxies with proxy_pass or grpc_pass, and every upstream block.
// A location that serves files, returns or passes to FastCGI/uwsgi/SCGI/
// memcached is not an object: it sets no timeout or retry of an HTTP
// upstream. The stream and mail contexts (TCP and mail proxies) are not
// read.

// Defaults of ngx_http_proxy_module and ngx_http_grpc_module.
const (
	nginxDefaultTimeoutSeconds = 60 // proxy_connect/read/send_timeout
)

var nginxDefaultNextUpstream = []string{"error", "timeout"}

// nginxNextUpstreamValues are the values proxy_next_upstream takes (grpc:
// the same but "updating", which is about the proxy cache).
var nginxNextUpstreamValues = map[string]bool{
	"error": true, "timeout": true, "invalid_header": true, "non_idempotent": true,
	"http_500": true, "http_502": true, "http_503": true, "http_504": true,
	"http_403": true, "http_404": true, "http_429": true, "updating": true, "off": true,
}

// ReadConfig reads an nginx config: a whole nginx.conf (main context with
// an http block) or a fragment of the http context (server and upstream
// blocks, as in conf.d/*.conf) or of a server (bare location blocks).
//
// include is resolved as nginx does it: a relative path against the
// directory of the configuration file nginx was started with (its conf
// prefix), here the directory of file, not against the directory of the
// file that holds the include. Layouts depend on it: Debian's sites in
// sites-enabled/ include "snippets/fastcgi-php.conf", which is
// /etc/nginx/snippets/..., and nginx's API gateway demo has, in
// conf.d/api_gateway.conf, "include conf.d/my_apis/*.conf".
// Hand Read the main nginx.conf for includes to resolve as nginx resolves
// them. A glob (* ? [ in any element) asks open for its directories and
// takes the answer as the names in them, one a line, a directory's ending
// in "/" (how an Opener answers a directory); a directory that does not
// exist matches nothing, as in nginx.
func ReadConfig(file string, data []byte, open target.Opener, b *budget.Budget) ([]target.Object, error) {
	top, err := nginxconf.Read(file, data, nginxOptions(open, target.OrNew(b)))
	if err != nil {
		return nil, nginxError(err)
	}
	return nginxInterpret(file, top)
}

// Detect: a file named *.conf or nginx.conf, or one whose first bytes
// have an http, server or location block and a proxy_pass or grpc_pass;
// never one that reads as HAProxy's sections.
func Detect(file string, data []byte) bool {
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	if target.LooksHAProxy(head) {
		return false
	}
	base := path.Base(filepath.ToSlash(file))
	if base == "nginx.conf" || strings.HasSuffix(base, ".conf") {
		return true
	}
	return nginxBlockRe.Match(head) && nginxPassRe.Match(head)
}

var (
	nginxBlockRe = regexp.MustCompile(`(?m)(^|[;{}\s])(http|server)\s*\{|(^|[;{}\s])location\s+[^;{]*\{`)
	nginxPassRe  = regexp.MustCompile(`(^|[;{}\s])(proxy_pass|grpc_pass)\s`)
)

// --- Directives.

// at is where a directive is, as the reader's errors and settings say it.
func at(d *nginxconf.Directive) target.Pos { return target.Pos{File: d.File, Line: d.Line} }

// rawArgs is the arguments as one string, for messages and Raw.
func rawArgs(d *nginxconf.Directive) string {
	vs := make([]string, len(d.Args))
	for i, a := range d.Args {
		vs[i] = a.Value
	}
	return strings.Join(vs, " ")
}

// nginxOptions read includes through open: a file's bytes taken from the
// run's budget, a directory answered with its names, one a line (a name
// ending in "/" is a directory, which a glob's inner elements match).
func nginxOptions(open target.Opener, b *budget.Budget) nginxconf.Options {
	o := nginxconf.Options{Budget: b}
	if open == nil {
		return o
	}
	o.Include = func(name, file string) ([]byte, error) {
		data, err := open(file)
		if err != nil {
			return nil, err
		}
		if err := b.Bytes(int64(len(data)), fmt.Sprintf("include %q (%s)", name, file)); err != nil {
			return nil, err
		}
		return data, nil
	}
	o.List = func(dir string) ([]nginxconf.Entry, error) {
		listing, err := open(dir)
		if err != nil {
			return nil, err
		}
		var out []nginxconf.Entry
		for _, n := range strings.Split(string(listing), "\n") {
			name, isDir := strings.CutSuffix(n, "/")
			out = append(out, nginxconf.Entry{Name: name, Dir: isDir})
		}
		return out, nil
	}
	return o
}

// nginxError is a read error of nginxconf as check says it: at its file
// and line, the cause kept for errors.Is (the budget's).
func nginxError(err error) error {
	var e *nginxconf.Error
	if !errors.As(err, &e) {
		return err
	}
	pos := target.Pos{File: e.File, Line: e.Line}
	switch {
	case e.Kind == nginxconf.KindBudget, e.Kind == nginxconf.KindRead && errors.Is(e.Err, budget.ErrSpent):
		return target.ErrorAt(pos, "%w", e.Err)
	case e.Kind == nginxconf.KindList:
		return target.ErrorAt(pos, "%s (an Opener answers a directory with the names in it, one a line)", e.Message())
	}
	return target.ErrorAt(pos, "%s", e.Message())
}

// --- Interpreting the http context.

// nginxInherited are the directives a location inherits from its server
// and the http block, per module.
var nginxInherited = func() map[string]bool {
	m := map[string]bool{"proxy_request_buffering": true}
	for _, mod := range []string{"proxy", "grpc"} {
		for _, s := range []string{"_connect_timeout", "_read_timeout", "_send_timeout", "_next_upstream", "_next_upstream_tries", "_next_upstream_timeout"} {
			m[mod+s] = true
		}
	}
	return m
}()

// nginxSettings are the inherited directives in force at a level, each
// already checked.
type nginxSettings map[string]*nginxconf.Directive

func (s nginxSettings) with(level []*nginxconf.Directive) (nginxSettings, error) {
	out := nginxSettings{}
	for k, v := range s {
		out[k] = v
	}
	seen := map[string]bool{}
	for _, d := range level {
		if d.IsBlock || !nginxInherited[d.Name] {
			continue
		}
		if seen[d.Name] {
			return nil, target.ErrorAt(at(d), "%q directive is duplicate", d.Name)
		}
		seen[d.Name] = true
		if err := checkNginxSetting(d); err != nil {
			return nil, err
		}
		out[d.Name] = d
	}
	return out, nil
}

// checkNginxSetting refuses what nginx refuses in an inherited directive.
func checkNginxSetting(d *nginxconf.Directive) error {
	switch {
	case strings.HasSuffix(d.Name, "_next_upstream"):
		if len(d.Args) == 0 {
			return target.ErrorAt(at(d), "invalid number of arguments in %q directive", d.Name)
		}
		for _, a := range d.Args {
			if !nginxNextUpstreamValues[a.Value] || a.Value == "updating" && strings.HasPrefix(d.Name, "grpc_") {
				return target.ErrorAt(at(d), "%s %q: not a condition nginx knows (error, timeout, invalid_header, http_500, http_502, http_503, http_504, http_403, http_404, http_429, non_idempotent, off)", d.Name, a.Value)
			}
		}
		return nil
	case d.Name == "proxy_request_buffering":
		if len(d.Args) != 1 || d.Arg(0) != "on" && d.Arg(0) != "off" {
			return target.ErrorAt(at(d), "proxy_request_buffering %q: not on or off", rawArgs(d))
		}
		return nil
	}
	if len(d.Args) != 1 {
		return target.ErrorAt(at(d), "invalid number of arguments in %q directive", d.Name)
	}
	if strings.HasSuffix(d.Name, "_tries") {
		if _, err := nginxNumber(d.Arg(0)); err != nil {
			return target.ErrorAt(at(d), "%s %q: not a number of tries", d.Name, d.Arg(0))
		}
		return nil
	}
	_, err := nginxSeconds(d)
	return err
}

// nginxNumber reads an unsigned decimal as ngx_atoi does.
func nginxNumber(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a number")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// nginxSeconds reads a timeout directive's value in seconds.
func nginxSeconds(d *nginxconf.Directive) (float64, error) {
	ms, err := ParseTime(d.Arg(0), false)
	if err != nil {
		return 0, target.ErrorAt(at(d), "%s %q: %v", d.Name, d.Arg(0), err)
	}
	return float64(ms) / 1000, nil
}

// ParseTime parses an nginx time as ngx_parse_time does: numbers with
// units ms s m h d w M y, each unit once and larger units first ("1m30s",
// "1h 30m" when quoted), a number without a unit being seconds ("90",
// "1m30"). With isSec false (a timeout, kept in milliseconds) it returns
// milliseconds and refuses M and y, as nginx does; with isSec true (a
// time in seconds: fail_timeout) it returns seconds and refuses ms.
func ParseTime(s string, isSec bool) (int64, error) {
	bad := errors.New("not an nginx time (a number with the units ms, s, m, h, d, w, largest first; a bare number is seconds)")
	if !isSec && strings.ContainsAny(s, "yM") {
		bad = errors.New("not an nginx time: months (M) and years (y) are not allowed in a timeout")
	}
	valid := false
	var value, total int64
	step := stStart
	if !isSec {
		step = stMonth // a timeout: no M, no y
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= '0' && c <= '9' {
			if value > (math.MaxInt64-int64(c-'0'))/10 {
				return 0, bad
			}
			value = value*10 + int64(c-'0')
			i++
			valid = true
			continue
		}
		next, scale, width := nginxTimeUnit(s[i:], step, isSec)
		if width == 0 {
			return 0, bad
		}
		i += width
		step = next
		if step != stMsec && !isSec {
			scale *= 1000
		}
		var ok bool
		if total, ok = addScaled(total, value, scale); !ok {
			return 0, bad
		}
		value = 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	if !valid {
		return 0, bad
	}
	// A number without a unit at the end: seconds.
	scale := int64(1)
	if !isSec {
		scale = 1000
	}
	total, ok := addScaled(total, value, scale)
	if !ok {
		return 0, bad
	}
	return total, nil
}

// timeStep is the last unit ngx_parse_time read, larger units first: a
// unit is read only after a larger one.
type timeStep int

const (
	stStart timeStep = iota
	stYear
	stMonth
	stWeek
	stDay
	stHour
	stMin
	stSec
	stMsec
	stLast // a bare number before a space: nothing may follow
)

// nginxTimeUnits are the units of one letter: the step each is and its
// length in seconds.
var nginxTimeUnits = map[byte]struct {
	step    timeStep
	seconds int64
}{
	'y': {stYear, 60 * 60 * 24 * 365},
	'M': {stMonth, 60 * 60 * 24 * 30},
	'w': {stWeek, 60 * 60 * 24 * 7},
	'd': {stDay, 60 * 60 * 24},
	'h': {stHour, 60 * 60},
	'm': {stMin, 60},
	's': {stSec, 1},
}

// nginxTimeUnit reads the unit s starts with after a number, as
// ngx_parse_time's switch does: the step it is, its scale (seconds, or
// milliseconds for ms) and its width in bytes; width 0 when it is no unit
// or not one allowed after step.
func nginxTimeUnit(s string, step timeStep, isSec bool) (next timeStep, scale int64, width int) {
	switch {
	case strings.HasPrefix(s, "ms"):
		if isSec || step >= stMsec {
			return step, 0, 0
		}
		return stMsec, 1, 2
	case s[0] == ' ':
		if step >= stSec {
			return step, 0, 0
		}
		return stLast, 1, 1
	}
	u, ok := nginxTimeUnits[s[0]]
	if !ok || step >= u.step {
		return step, 0, 0
	}
	return u.step, u.seconds, 1
}

// addScaled is total + value*scale, false when it overflows an int64.
func addScaled(total, value, scale int64) (int64, bool) {
	if value > math.MaxInt64/scale {
		return 0, false
	}
	value *= scale
	if total > math.MaxInt64-value {
		return 0, false
	}
	return total + value, true
}

// nginxUpstream is an upstream block: its servers as the round-robin
// balancer counts them.
type nginxUpstream struct {
	name      string
	pos       target.Pos
	servers   []nginxServer
	keepalive string
	zone      bool
	balancer  string // hash, ip_hash, least_conn, random; "" = round robin
	obj       *target.Object
}

type nginxServer struct {
	addr     string
	pos      target.Pos
	backup   bool
	down     bool
	maxConns int  // 0 = no limit
	name     bool // a host name: nginx makes one peer per address it resolves to
	dynamic  bool // "resolve" or "service=": re-resolved at run time
	maxFails string
}

// tries is the number of peers a request may try (the balancer's
// peers->tries: servers not down, backups included) and whether the
// upstream is a single peer, which nginx never retries.
func (u *nginxUpstream) tries() (n int, single bool) {
	primary, backup := 0, 0
	for _, s := range u.servers {
		if s.backup {
			backup++
		} else {
			primary++
		}
		if !s.down {
			n++
		}
	}
	return n, primary == 1 && backup == 0
}

// nginxInterp is the state of one read: the upstreams and the objects.
type nginxInterp struct {
	upstreams map[string]*nginxUpstream
	order     []*nginxUpstream
	objects   []target.Object
	names     target.UniqueNames
	workers   string // worker_processes as written; "" = the default, 1
	workersAt target.Pos
}

// nginxInterpret reads the objects of the directives of a file, includes
// expanded.
func nginxInterpret(file string, top []*nginxconf.Directive) ([]target.Object, error) {
	in := &nginxInterp{upstreams: map[string]*nginxUpstream{}}
	var https []*nginxconf.Directive
	isMain := false
	hasServer, hasLocation := false, false
	for _, d := range top {
		switch d.Name {
		case "http", "events", "stream", "mail":
			isMain = true
			if d.Name == "http" {
				if len(https) > 0 {
					return nil, target.ErrorAt(at(d), "\"http\" directive is duplicate")
				}
				https = append(https, d)
			}
		case "worker_processes":
			in.workers, in.workersAt = d.Arg(0), at(d)
		case "server", "upstream":
			hasServer = true
		case "location":
			hasLocation = true
		}
	}
	if isMain {
		for _, d := range top {
			if nginxInherited[d.Name] || d.Name == "proxy_pass" || d.Name == "grpc_pass" {
				return nil, target.ErrorAt(at(d), "%q directive is not allowed here", d.Name)
			}
		}
	}
	var err error
	switch {
	case isMain:
		for _, h := range https {
			if err = in.http(h.Block); err != nil {
				return nil, err
			}
		}
	case hasLocation && !hasServer:
		// A fragment of a server block: its locations in a server
		// without a name.
		srv := &nginxconf.Directive{Name: "server", IsBlock: true, Block: top, File: file, Line: 1}
		if err = in.server(srv, nginxSettings{}, true); err != nil {
			return nil, err
		}
	default:
		if err = in.http(top); err != nil {
			return nil, err
		}
	}
	return in.objects, nil
}

// http reads one http block (or an http-context fragment).
func (in *nginxInterp) http(block []*nginxconf.Directive) error {
	if err := in.collectUpstreams(block); err != nil {
		return err
	}
	set, err := nginxSettings{}.with(block)
	if err != nil {
		return err
	}
	for _, d := range block {
		switch {
		case d.Name == "server" && d.IsBlock:
			if err := in.server(d, set, false); err != nil {
				return err
			}
		case d.Name == "upstream" || d.IsBlock:
		default:
			if err := checkNginxContext(d); err != nil {
				return err
			}
		}
	}
	in.finish()
	return nil
}

// checkNginxContext refuses the directives of a location where they are
// not allowed.
func checkNginxContext(d *nginxconf.Directive) error {
	switch d.Name {
	case "proxy_pass", "grpc_pass":
		return target.ErrorAt(at(d), "%q directive is not allowed here", d.Name)
	}
	return nil
}

// collectUpstreams reads the upstream blocks of an http block first:
// a location may name one defined after it.
func (in *nginxInterp) collectUpstreams(block []*nginxconf.Directive) error {
	for _, d := range block {
		if d.Name != "upstream" || !d.IsBlock {
			continue
		}
		if len(d.Args) != 1 {
			return target.ErrorAt(at(d), "invalid number of arguments in \"upstream\" directive")
		}
		key := strings.ToLower(d.Arg(0))
		if _, dup := in.upstreams[key]; dup {
			return target.ErrorAt(at(d), "duplicate upstream %q", d.Arg(0))
		}
		u := &nginxUpstream{name: d.Arg(0), pos: at(d)}
		for _, s := range d.Block {
			switch s.Name {
			case "server":
				srv, err := parseNginxServer(s)
				if err != nil {
					return err
				}
				u.servers = append(u.servers, srv)
			case "keepalive":
				u.keepalive = s.Arg(0)
			case "zone":
				u.zone = true
			case "hash", "ip_hash", "least_conn", "random":
				u.balancer = s.Name
			default:
				if nginxInherited[s.Name] || s.Name == "proxy_pass" || s.Name == "grpc_pass" {
					return target.ErrorAt(at(s), "%q directive is not allowed here", s.Name)
				}
			}
		}
		if len(u.servers) == 0 {
			return target.ErrorAt(at(d), "no servers are inside upstream %q", u.name)
		}
		in.upstreams[key] = u
		in.order = append(in.order, u)
	}
	return nil
}

var nginxIPv4 = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$`)

// parseNginxServer reads a server line of an upstream block.
func parseNginxServer(d *nginxconf.Directive) (nginxServer, error) {
	if len(d.Args) == 0 {
		return nginxServer{}, target.ErrorAt(at(d), "invalid number of arguments in \"server\" directive")
	}
	s := nginxServer{addr: d.Arg(0), pos: at(d)}
	host := s.addr
	switch {
	case strings.HasPrefix(host, "unix:"):
	case strings.HasPrefix(host, "["):
	default:
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = host[:i]
		}
		s.name = !nginxIPv4.MatchString(host)
	}
	for _, a := range d.Args[1:] {
		v := a.Value
		switch {
		case v == "backup":
			s.backup = true
		case v == "down":
			s.down = true
		case v == "resolve" || strings.HasPrefix(v, "service="):
			s.dynamic = true
		case strings.HasPrefix(v, "max_conns="):
			n, err := nginxNumber(strings.TrimPrefix(v, "max_conns="))
			if err != nil {
				return s, target.ErrorAt(at(d), "server %s: %q: max_conns is not a number", s.addr, v)
			}
			s.maxConns = min(n, math.MaxInt32+1)
		case strings.HasPrefix(v, "max_fails="):
			if _, err := nginxNumber(strings.TrimPrefix(v, "max_fails=")); err != nil {
				return s, target.ErrorAt(at(d), "server %s: %q: max_fails is not a number", s.addr, v)
			}
			s.maxFails = strings.TrimPrefix(v, "max_fails=")
		case strings.HasPrefix(v, "fail_timeout="):
			if _, err := ParseTime(strings.TrimPrefix(v, "fail_timeout="), true); err != nil {
				return s, target.ErrorAt(at(d), "server %s: %q: %v", s.addr, v, err)
			}
		}
	}
	return s, nil
}

// nginxServerBlock is what a location needs of its server.
type nginxServerBlock struct {
	router  string // Object.Router of its locations: the server's file and line
	label   string // "server example.com", "" for a fragment
	matches []target.Match
	notes   []string
}

func (in *nginxInterp) server(d *nginxconf.Directive, set nginxSettings, fragment bool) error {
	set, err := set.with(d.Block)
	if err != nil {
		return err
	}
	sb := &nginxServerBlock{router: "nginx " + at(d).String()}
	var names []string
	listen := ""
	for _, c := range d.Block {
		switch c.Name {
		case "server_name":
			for _, a := range c.Args {
				names = append(names, a.Value)
			}
		case "listen":
			if listen == "" {
				listen = c.Arg(0)
			}
		}
	}
	for _, n := range names {
		switch {
		case n == "" || n == "_":
		case strings.HasPrefix(n, "~"):
			sb.notes = append(sb.notes, fmt.Sprintf("server_name %s is a regex: not read as a host match", n))
		default:
			sb.matches = append(sb.matches, target.Match{Kind: target.MatchHost, Value: strings.ToLower(n)})
		}
	}
	// The server's label: its first name, or where it listens when it
	// has none ("_" is the usual name of a catch-all server).
	switch {
	case fragment:
	case len(names) > 0 && names[0] != "" && names[0] != "_":
		sb.label = "server " + names[0]
	case listen != "":
		sb.label = "server " + listen
	default:
		sb.label = "server"
	}
	for _, c := range d.Block {
		switch {
		case c.Name == "location" && c.IsBlock:
			if err := in.location(c, set, sb, nil); err != nil {
				return err
			}
		case c.IsBlock:
		default:
			if err := checkNginxContext(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// nginxLoc is a location's match, for its own object and its nested
// locations.
type nginxLoc struct {
	label string // "location = /x"
	match *target.Match
	named bool
}

func parseNginxLocation(d *nginxconf.Directive) (nginxLoc, error) {
	var mod, uri string
	switch len(d.Args) {
	case 2:
		mod, uri = d.Arg(0), d.Arg(1)
		switch mod {
		case "=", "~", "~*", "^~":
		default:
			return nginxLoc{}, target.ErrorAt(at(d), "invalid location modifier %q", mod)
		}
	case 1:
		uri = d.Arg(0)
		switch {
		case strings.HasPrefix(uri, "=") && len(uri) > 1:
			mod, uri = "=", uri[1:]
		case strings.HasPrefix(uri, "^~") && len(uri) > 2:
			mod, uri = "^~", uri[2:]
		case strings.HasPrefix(uri, "~*") && len(uri) > 2:
			mod, uri = "~*", uri[2:]
		case strings.HasPrefix(uri, "~") && len(uri) > 1:
			mod, uri = "~", uri[1:]
		}
	default:
		return nginxLoc{}, target.ErrorAt(at(d), "invalid number of arguments in \"location\" directive")
	}
	l := nginxLoc{label: "location " + uri}
	if mod != "" {
		l.label = "location " + mod + " " + uri
	}
	switch mod {
	case "=":
		l.match = &target.Match{Kind: target.MatchExact, Value: uri}
	case "~":
		l.match = &target.Match{Kind: target.MatchRegex, Value: uri}
	case "~*":
		l.match = &target.Match{Kind: target.MatchRegex, Value: uri, CaseInsensitive: true}
	default:
		if strings.HasPrefix(uri, "@") && mod == "" {
			l.named = true
		} else {
			l.match = &target.Match{Kind: target.MatchPrefix, Value: uri, NoRegex: mod == "^~"}
		}
	}
	return l, nil
}

// location reads a location and its nested blocks; parents are the
// enclosing locations, outermost first.
func (in *nginxInterp) location(d *nginxconf.Directive, set nginxSettings, sb *nginxServerBlock, parents []nginxLoc) error {
	loc, err := parseNginxLocation(d)
	if err != nil {
		return err
	}
	set, err = set.with(d.Block)
	if err != nil {
		return err
	}
	matches := append([]target.Match(nil), sb.matches...)
	if loc.match != nil {
		matches = append(matches, *loc.match)
		// A nested location holds only requests its parents hold: keep
		// the parents' matches of other kinds (a regex in a prefix).
		for i := len(parents) - 1; i >= 0; i-- {
			if m := parents[i].match; m != nil && m.Kind != loc.match.Kind && !target.HasMatchKind(matches, m.Kind) {
				matches = append(matches, *m)
			}
		}
	}
	label := strings.TrimSpace(sb.label + " " + loc.label)
	pass, err := nginxPassOf(d.Block)
	if err != nil {
		return err
	}
	var nested []string
	for _, c := range d.Block {
		if c.Name == "location" && c.IsBlock {
			nested = append(nested, fmt.Sprintf("%s (%s)", rawArgs(c), at(c)))
		}
	}
	if pass != nil {
		o, err := in.proxyObject(label, at(d), matches, set, pass)
		if err != nil {
			return err
		}
		o.Notes = append(append([]string(nil), sb.notes...), o.Notes...)
		if len(parents) == 0 && !loc.named {
			o.Router = sb.router // nested locations are picked inside theirs: left standalone
		}
		if loc.named {
			o.Notes = append(o.Notes, fmt.Sprintf("%s is a named location: requests reach it only through error_page, try_files or a redirect", loc.label))
		}
		if len(nested) > 0 {
			o.Notes = append(o.Notes, "nested locations take some of its requests: "+strings.Join(nested, ", "))
		}
		in.add(o)
	}
	for _, c := range d.Block {
		switch {
		case c.Name == "location" && c.IsBlock:
			if err := in.location(c, set, sb, append(parents, loc)); err != nil {
				return err
			}
		case (c.Name == "if" || c.Name == "limit_except") && c.IsBlock:
			if err := in.conditional(c, label, matches, set); err != nil {
				return err
			}
		}
	}
	return nil
}

// nginxTries says "1 try", "3 tries".
func nginxTries(n int) string {
	if n == 1 {
		return "1 try"
	}
	return strconv.Itoa(n) + " tries"
}

// conditional reads an "if" or "limit_except" block of a location: with
// a proxy_pass of its own it is an object, the location's timeouts and
// retries in force (nginx takes none of them inside these blocks).
func (in *nginxInterp) conditional(d *nginxconf.Directive, label string, matches []target.Match, set nginxSettings) error {
	for _, c := range d.Block {
		if nginxInherited[c.Name] {
			return target.ErrorAt(at(c), "%q directive is not allowed here", c.Name)
		}
	}
	pass, err := nginxPassOf(d.Block)
	if err != nil || pass == nil {
		return err
	}
	cond := d.Name + " " + rawArgs(d)
	o, err := in.proxyObject(label+" "+cond, at(d), matches, set, pass)
	if err != nil {
		return err
	}
	switch d.Name {
	case "if":
		o.Notes = append(o.Notes, fmt.Sprintf("applies only when %s holds: the condition is not read as a match", cond))
	default:
		o.Notes = append(o.Notes, fmt.Sprintf("%s: applies to the methods other than %s", cond, rawArgs(d)))
	}
	in.add(o)
	return nil
}

// nginxPassOf returns the proxy_pass or grpc_pass of a block.
func nginxPassOf(block []*nginxconf.Directive) (*nginxconf.Directive, error) {
	var pass *nginxconf.Directive
	for _, c := range block {
		if c.IsBlock || c.Name != "proxy_pass" && c.Name != "grpc_pass" {
			continue
		}
		if pass != nil {
			return nil, target.ErrorAt(at(c), "%q directive is duplicate", c.Name)
		}
		if len(c.Args) != 1 {
			return nil, target.ErrorAt(at(c), "invalid number of arguments in %q directive", c.Name)
		}
		pass = c
	}
	return pass, nil
}

// nginxPassTarget is what a proxy_pass or grpc_pass sends to.
type nginxPassTarget struct {
	upstream *nginxUpstream // an upstream block, or nil
	host     string         // the host[:port] or upstream name as written
	dynamic  bool           // variables: chosen per request
	name     bool           // a host name nginx resolves at startup
}

func (in *nginxInterp) passTarget(d *nginxconf.Directive) (nginxPassTarget, error) {
	u := d.Arg(0)
	rest := u
	switch d.Name {
	case "proxy_pass":
		switch {
		case strings.HasPrefix(strings.ToLower(u), "http://"):
			rest = u[7:]
		case strings.HasPrefix(strings.ToLower(u), "https://"):
			rest = u[8:]
		case strings.Contains(u, "$"):
			return nginxPassTarget{host: u, dynamic: true}, nil
		default:
			return nginxPassTarget{}, target.ErrorAt(at(d), "proxy_pass %q: invalid URL prefix (http:// or https://)", u)
		}
	default:
		switch {
		case strings.HasPrefix(strings.ToLower(u), "grpc://"):
			rest = u[7:]
		case strings.HasPrefix(strings.ToLower(u), "grpcs://"):
			rest = u[8:]
		}
	}
	if strings.Contains(u, "$") {
		return nginxPassTarget{host: u, dynamic: true}, nil
	}
	host := rest
	if strings.HasPrefix(host, "unix:") {
		if i := strings.IndexByte(host[5:], ':'); i >= 0 {
			host = host[:5+i]
		}
		return nginxPassTarget{host: host}, nil
	}
	if i := strings.IndexAny(host, "/?"); i >= 0 {
		host = host[:i]
	}
	name, port := host, ""
	if strings.HasPrefix(name, "[") {
		if i := strings.IndexByte(name, ']'); i >= 0 {
			name, port = name[:i+1], strings.TrimPrefix(name[i+1:], ":")
		}
	} else if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name, port = name[:i], name[i+1:]
	}
	if name == "" {
		return nginxPassTarget{}, target.ErrorAt(at(d), "%s %q: no host", d.Name, u)
	}
	if up := in.upstreams[strings.ToLower(name)]; up != nil {
		if port != "" {
			return nginxPassTarget{}, target.ErrorAt(at(d), "upstream %q may not have port %s", up.name, port)
		}
		return nginxPassTarget{upstream: up, host: up.name}, nil
	}
	return nginxPassTarget{host: host, name: !nginxIPv4.MatchString(name) && !strings.HasPrefix(name, "[")}, nil
}

// proxyObject builds the object of a proxying location from the settings
// in force there.
func (in *nginxInterp) proxyObject(name string, pos target.Pos, matches []target.Match, set nginxSettings, pass *nginxconf.Directive) (target.Object, error) {
	mod := "proxy"
	if pass.Name == "grpc_pass" {
		mod = "grpc"
	}
	tg, err := in.passTarget(pass)
	if err != nil {
		return target.Object{}, err
	}
	o := target.Object{Target: "nginx", Kind: "location", Name: name, Pos: pos, Matches: matches, Upstream: tg.host, TimeoutIdle: true, Jitter: "none"}
	if err := proxyTimeouts(&o, mod, set); err != nil {
		return o, err
	}
	off, next := retryConditions(&o, mod, set)
	if b := set["proxy_request_buffering"]; mod == "proxy" && b != nil && b.Arg(0) == "off" && !off {
		o.Notes = append(o.Notes, fmt.Sprintf("proxy_request_buffering off (%s): a request whose body was sent is not passed to the next server", at(b)))
	}
	switch {
	case off:
		o.Attempts = target.Set(1, at(next), "off")
	case len(o.RetryOn.Value) == 0:
		// "non_idempotent" alone: no condition to pass a request on.
		o.Attempts = target.Set(1, at(next), rawArgs(next))
	case tg.dynamic:
		o.Notes = append(o.Notes, fmt.Sprintf("%s %s has variables: the server is chosen per request, so the number of tries is not known", pass.Name, pass.Arg(0)))
	default:
		proxyTries(&o, mod, set, pass, tg)
	}
	if d := set[mod+"_next_upstream_timeout"]; d != nil && !off {
		if v, _ := nginxSeconds(d); v > 0 {
			o.RetryWindow = target.Set(v, at(d), d.Arg(0))
			o.Notes = append(o.Notes, fmt.Sprintf("%s_next_upstream_timeout %s (%s): no try starts after %s; one begun before may run its own timeouts, so the worst case is about %s plus one try", mod, d.Arg(0), at(d), d.Arg(0), d.Arg(0)))
		}
	}
	if tg.upstream != nil && tg.upstream.balancer != "" {
		o.Notes = append(o.Notes, fmt.Sprintf("upstream %s balances with %s: a retry still goes to another server", tg.upstream.name, tg.upstream.balancer))
	}
	return o, nil
}

// proxyTimeouts sets a proxying location's timeouts, mod's (proxy or
// grpc) read and connect timeouts in force or nginx's default, and notes
// its send timeout.
func proxyTimeouts(o *target.Object, mod string, set nginxSettings) error {
	timeout := func(directive string) (*target.Setting[float64], error) {
		d := set[directive]
		if d == nil {
			return target.Keyed(target.Defaulted[float64](nginxDefaultTimeoutSeconds, o.Pos), directive), nil
		}
		v, err := nginxSeconds(d)
		if err != nil {
			return nil, err
		}
		return target.Keyed(target.Set(v, at(d), d.Arg(0)), directive), nil
	}
	var err error
	if o.Timeout, err = timeout(mod + "_read_timeout"); err != nil {
		return err
	}
	if o.ConnectTimeout, err = timeout(mod + "_connect_timeout"); err != nil {
		return err
	}
	if d := set[mod+"_send_timeout"]; d != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("%s_send_timeout %s (%s) bounds the wait between two writes of the request", mod, d.Arg(0), at(d)))
	}
	return nil
}

// retryConditions sets the conditions a proxying location retries on:
// nginx's default "error timeout", or mod's _next_upstream in force (next),
// where "off" wins over anything beside it.
func retryConditions(o *target.Object, mod string, set nginxSettings) (off bool, next *nginxconf.Directive) {
	next = set[mod+"_next_upstream"]
	if next == nil {
		o.RetryOn = target.Defaulted(append([]string(nil), nginxDefaultNextUpstream...), o.Pos)
		o.RetryNonIdempotent = target.Defaulted(false, o.Pos)
		return false, nil
	}
	conds, nonIdem := []string{}, false
	for _, a := range next.Args {
		switch a.Value {
		case "off":
			off = true
		case "non_idempotent":
			nonIdem = true
		default:
			if !slices.Contains(conds, a.Value) {
				conds = append(conds, a.Value)
			}
		}
	}
	if off {
		conds, nonIdem = []string{}, false
	}
	o.RetryOn = target.Set(conds, at(next), rawArgs(next))
	o.RetryNonIdempotent = target.Set(nonIdem, at(next), rawArgs(next))
	return off, next
}

// proxyTries sets the tries of a location that retries, to a known
// server or upstream: one per peer, at most mod's _next_upstream_tries.
func proxyTries(o *target.Object, mod string, set nginxSettings, pass *nginxconf.Directive, tg nginxPassTarget) {
	tries, triesAt := 0, set[mod+"_next_upstream_tries"]
	if triesAt != nil {
		tries, _ = nginxNumber(triesAt.Arg(0))
	}
	peers, single, what := passPeers(pass, tg)
	n := peers
	if single {
		n = 1
	}
	if tries > 0 && tries < n {
		n = tries
	}
	if triesAt == nil {
		o.Attempts = target.Defaulted(n, o.Pos)
		if n > 1 || tg.name {
			o.Notes = append(o.Notes, fmt.Sprintf("%s_next_upstream_tries not set: one try per server, and %s", mod, what))
		} else if tg.upstream != nil && single {
			o.Notes = append(o.Notes, what)
		}
		return
	}
	o.Attempts = target.Set(n, at(triesAt), triesAt.Arg(0))
	switch {
	case tries == 0:
		o.Notes = append(o.Notes, fmt.Sprintf("%s_next_upstream_tries 0: one try per server, and %s", mod, what))
	case tries > n:
		o.Notes = append(o.Notes, fmt.Sprintf("%s_next_upstream_tries %s, but %s: %s", mod, triesAt.Arg(0), what, nginxTries(n)))
	}
}

// passPeers is the peers a pass sends to as the balancer counts them,
// whether they are a single peer (which nginx never retries), and what a
// note says of them.
func passPeers(pass *nginxconf.Directive, tg nginxPassTarget) (peers int, single bool, what string) {
	u := tg.upstream
	if u == nil {
		if tg.name {
			return 1, true, fmt.Sprintf("%s %s is a host name: nginx makes one peer per address it resolves to at startup, counted here as one", pass.Name, tg.host)
		}
		return 1, true, fmt.Sprintf("%s %s is one server", pass.Name, tg.host)
	}
	peers, single = u.tries()
	switch {
	case !single:
		what = fmt.Sprintf("upstream %s has %s", u.name, human.Plural(int64(peers), "server"))
	case u.servers[0].name:
		what = fmt.Sprintf("upstream %s has one server, %s, which nginx never retries (a host name is one peer per address it resolves to, counted here as one)", u.name, u.servers[0].addr)
	default:
		what = fmt.Sprintf("upstream %s has one server, which nginx never retries", u.name)
	}
	return peers, single, what
}

// add appends an object, its name made unique: a repeated name takes
// its position, and a position repeated too (a file included twice) a
// number.
func (in *nginxInterp) add(o target.Object) {
	name := o.Name
	if in.names.Taken[name] {
		name = fmt.Sprintf("%s (%s)", o.Name, o.Pos)
	}
	o.Name = in.names.Name(name, func(i int) string { return fmt.Sprintf("%s #%d", name, i) })
	in.objects = append(in.objects, o)
}

// finish adds the objects of the upstream blocks read so far.
func (in *nginxInterp) finish() {
	for _, u := range in.order {
		if u.obj != nil {
			continue
		}
		o := target.Object{Target: "nginx", Kind: "upstream", Name: "upstream " + u.name, Pos: u.pos}
		backup, down, names, dynamic := 0, 0, []string{}, false
		limits, all := []string{}, true
		sum := 0
		for _, s := range u.servers {
			switch {
			case s.down:
				down++
				continue
			case s.backup:
				backup++
			}
			if s.name && !slices.Contains(names, s.addr) {
				names = append(names, s.addr)
			}
			dynamic = dynamic || s.dynamic
			if s.maxConns > 0 {
				sum = min(sum+s.maxConns, math.MaxInt32+1)
				limits = append(limits, strconv.Itoa(s.maxConns))
			} else {
				all = false
			}
		}
		desc := human.Plural(int64(len(u.servers)), "server")
		if backup > 0 || down > 0 {
			desc += fmt.Sprintf(" (%d backup, %d down)", backup, down)
		}
		o.Notes = append(o.Notes, desc)
		if len(names) > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("host names (%s): nginx makes one peer per address each resolves to at startup, counted here as one", strings.Join(names, ", ")))
		}
		if dynamic {
			o.Notes = append(o.Notes, "servers with resolve or service=: their addresses change at run time")
		}
		if all && sum > math.MaxInt32 {
			o.Notes = append(o.Notes, fmt.Sprintf("max_conns of the servers adds up to %d: read as no limit", sum))
		} else if all && len(limits) > 0 {
			raw := "max_conns=" + strings.Join(limits, "+")
			workers := 1
			if !u.zone {
				switch n, err := nginxNumber(in.workers); {
				case in.workers == "":
				case err == nil && n > 0 && n <= 1<<16:
					workers = n
				default:
					o.Notes = append(o.Notes, fmt.Sprintf("no zone: max_conns counts per worker process, and worker_processes %s (%s) is not a number: the sum of one worker is given", in.workers, in.workersAt))
				}
				if workers > 1 {
					o.Notes = append(o.Notes, fmt.Sprintf("no zone: max_conns counts per worker process, so %d workers let %d x %d requests in flight", workers, workers, sum))
				}
			}
			o.MaxInFlight = &target.Setting[int]{Value: sum * workers, Pos: u.pos, Raw: raw}
		} else if len(limits) > 0 {
			o.Notes = append(o.Notes, "max_conns on some servers only: no limit over the upstream")
		}
		if u.keepalive != "" {
			o.Notes = append(o.Notes, fmt.Sprintf("keepalive %s: idle connections kept per worker process", u.keepalive))
		}
		failing := 0
		for _, s := range u.servers {
			if s.maxFails != "0" && !s.down {
				failing++
			}
		}
		if failing > 0 && len(u.servers) > 1 {
			o.Notes = append(o.Notes, fmt.Sprintf("%s without max_fails=0: after max_fails failures (default 1) a server is left out of the tries for fail_timeout (default 10s)", human.Plural(int64(failing), "server")))
		}
		u.obj = &o
		in.add(o)
	}
}
