package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// JSON lines: one JSON object per line, read with jsonlScanner, which pulls
// out only the fields a format needs. Four formats share the decoder:
//
//	format      latency (unit)       time          status            path            method          host          upstream
//	envoy-json  duration (ms)        start_time    response_code     path            method          authority     upstream_host
//	traefik     Duration (ns)        StartUTC      DownstreamStatus  RequestPath     RequestMethod   RequestHost   ServiceName
//	caddy       duration (s)         ts            status            request.uri     request.method  request.host  -
//	jsonl       --field (--unit)     --time-field  --status-field    --path-field    --method-field  -             -
//
// envoy-json's names are those of Istio's JSON access log
// (EnvoyJSONLogFormatIstio in istio/istio pilot/pkg/model/telemetry_logging.go),
// the usual json_format of Envoy; it reads response_flags as the text format
// does (see envoy.go) and with --latency upstream takes upstream_service_time.
// Traefik's names are the keys of its access log (pkg/middlewares/accesslog/
// logdata.go); --latency upstream takes OriginDuration (ns), the time the
// origin server took, and excludes as "no upstream" the lines Traefik
// answered itself (a redirect, a 404 without a router), where OriginStatus
// is 0 or absent and OriginDuration 0. DownstreamStatus is the status the
// client got. Caddy's names are those of its "handled request" access log
// entry (modules/caddyhttp); its default encoder writes duration in seconds
// as a float (--unit ns for a log with duration_format nano) and ts in Unix
// seconds. jsonl needs --field, and --unit when its values are numbers.
//
// --field, --time-field, --status-field, --path-field and --method-field
// override a format's names and --unit its unit. A name is a dotted path
// into nested objects (request.uri).
//
// Values: a latency is a JSON number or a string holding one, in the unit;
// for traefik, caddy and jsonl also a Go duration string ("1.5ms", "250µs"),
// which carries its own unit (Caddy's duration_format "string"). envoy-json
// takes numbers only, as Envoy writes them. null, "-" (Envoy's unset value),
// "" and an absent member are unknown: a sample without its latency is kept
// but excluded, as "no duration" (or "no upstream" with --latency
// upstream; "no FIELD" for jsonl), so that a wrong --field shows up in the
// report rather than as a wall of errors. A time is an RFC 3339 string, or a
// number or numeric string of Unix seconds or milliseconds (see parseTime).
// A status is a number or a numeric string.
//
// Auto-detection looks at each line until one decides (format.go's
// sniff): envoy-json when it has response_code and duration, traefik when
// it has Duration and RequestPath, caddy when it has duration and a logger
// or a request object. Caddy's own messages before its first access log
// entry are looked past (caddyNotRequest). Generic jsonl is never
// auto-detected: it cannot know which field is the latency without
// --field. A line longer than 64 KiB is not recognized.
//
// Caddy writes "status":0 when the client went away before an answer (the
// reverse proxy's upstream had not answered yet): the sample is censored,
// as nginx's 499 is, at the duration Caddy measured, which the client
// waited at least. Its log messages and the error log's copy of a failed
// request are not requests (caddyMessage).

// Reasons of the JSON decoders.
const (
	jsonlReasonNotDuration = "is not a number or a duration such as 1.5ms"
	jsonlReasonNoUnit      = "is a number but no unit was given (%s ns, us, ms or s)" // of usage.Unit
)

// jsonlLayout is one JSON log format: where its fields are and what its
// latency's unit is.
type jsonlLayout struct {
	format   string
	latency  string        // path of the latency ("request")
	upstream string        // path of the latency with --latency upstream; "": none
	unit     time.Duration // unit of latency numbers; 0: --unit is needed
	time     string
	status   string
	path     string
	method   string
	host     string
	backend  string // the upstream that served the call
	flags    string // Envoy's response flags
	// origin is the upstream's status: with --latency upstream, a line where
	// it is unset or 0 had no upstream (Traefik answered itself), so its
	// upstream time is unknown however it is written.
	origin string
	// durations accepts Go duration strings as latencies.
	durations bool
	// logger is the path of the name of the logger that wrote the entry;
	// notRequest, given the line and that name, says which lines are the
	// server's own messages, not requests (Caddy's).
	logger     string
	notRequest func(line, logger []byte) notRequest
	// zeroCensored: a status of 0 means the client went away before an
	// answer (Caddy), a censored observation like nginx's 499.
	zeroCensored bool
}

var (
	jsonlEnvoyLayout = jsonlLayout{
		format: "envoy-json", latency: "duration", upstream: "upstream_service_time", unit: time.Millisecond,
		time: "start_time", status: "response_code", path: "path", method: "method",
		host: "authority", backend: "upstream_host", flags: "response_flags",
	}
	jsonlTraefikLayout = jsonlLayout{
		format: "traefik", latency: "Duration", upstream: "OriginDuration", unit: time.Nanosecond,
		time: "StartUTC", status: "DownstreamStatus", path: "RequestPath", method: "RequestMethod",
		host: "RequestHost", backend: "ServiceName", origin: "OriginStatus", durations: true,
	}
	jsonlCaddyLayout = jsonlLayout{
		format: "caddy", latency: "duration", unit: time.Second,
		time: "ts", status: "status", path: "request.uri", method: "request.method",
		host: "request.host", durations: true,
		logger: "logger", notRequest: caddyMessage, zeroCensored: true,
	}
	jsonlGenericLayout = jsonlLayout{format: "jsonl", durations: true}
)

// Indexes of the fields a jsonlParser extracts.
const (
	jfLatency  = iota
	jfDuration // Envoy's duration, when the latency is the upstream time
	jfTime
	jfStatus
	jfPath
	jfMethod
	jfHost
	jfBackend
	jfFlags
	jfOrigin // the upstream's status (Traefik's OriginStatus), with --latency upstream
	jfLogger // the logger that wrote the entry (Caddy's)
	jfCount
)

// jsonlParser is the LineParser of the JSON formats.
type jsonlParser struct {
	sc        *jsonlScanner
	names     [jfCount]string // the field's path, "" when not extracted
	idx       [jfCount]int    // the field's index among sc's paths
	unit      time.Duration
	durations bool
	envoy     *envoyRules // nil unless envoy-json
	noValue   string      // Sample.Excluded when the latency is unknown
	clock     envoyClock
	// notRequest and zeroCensored: see jsonlLayout.
	notRequest   func(line, logger []byte) notRequest
	zeroCensored bool
}

func newJSONLParser(l jsonlLayout, o Options) (*jsonlParser, error) {
	p := &jsonlParser{durations: l.durations, unit: l.unit, noValue: ExcludedNoDuration,
		notRequest: l.notRequest, zeroCensored: l.zeroCensored}
	if o.Unit < 0 {
		return nil, fmt.Errorf("unit %v is negative", o.Unit)
	}
	if o.Unit > 0 {
		p.unit = o.Unit
	}
	if err := CheckLatency(l.format, o.Latency); err != nil {
		return nil, err
	}
	upstream := o.Latency == envoyLatencyUpstream
	if upstream && l.upstream == "" && o.Field == "" {
		return nil, fmt.Errorf("%s logs have no upstream time: use %s request, or name a field with %s", l.format, usage.Latency, usage.Field)
	}
	if l.flags != "" {
		rules, err := newEnvoyRules(l.format, o.Latency)
		if err != nil {
			return nil, err
		}
		p.envoy = &rules
	}

	pick := func(override, def string) string {
		if override != "" {
			return override
		}
		return def
	}
	p.names[jfLatency] = pick(o.Field, l.latency)
	if upstream && o.Field == "" {
		p.names[jfLatency] = l.upstream
	}
	if p.names[jfLatency] == "" {
		return nil, fmt.Errorf("%s: name the latency field with %s (a dotted path, e.g. request.duration_ms) and the unit of its numbers with %s", l.format, usage.Field, usage.Unit)
	}
	switch {
	case upstream:
		p.noValue = ExcludedNoUpstream
		if p.envoy != nil {
			p.names[jfDuration] = l.latency
		}
	case l.latency == "":
		p.noValue = "no " + p.names[jfLatency]
	}
	p.names[jfTime] = pick(o.TimeField, l.time)
	p.names[jfStatus] = pick(o.StatusField, l.status)
	p.names[jfPath] = pick(o.PathField, l.path)
	p.names[jfMethod] = pick(o.MethodField, l.method)
	p.names[jfHost] = l.host
	p.names[jfBackend] = l.backend
	p.names[jfFlags] = l.flags
	p.names[jfLogger] = l.logger
	if upstream {
		p.names[jfOrigin] = l.origin
	}

	var paths []string
	for i, n := range p.names {
		p.idx[i] = -1
		if n == "" {
			continue
		}
		if strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".") || strings.Contains(n, "..") {
			return nil, fmt.Errorf("%s: field %q is not a dotted path (name.name...)", l.format, n)
		}
		if len(n) > jsonlMaxPathLen {
			return nil, fmt.Errorf("%s: field name of %d bytes is too long", l.format, len(n))
		}
		p.idx[i] = len(paths)
		for k, q := range paths { // two roles may read the same field
			if q == n {
				p.idx[i] = k
			}
		}
		if p.idx[i] == len(paths) {
			paths = append(paths, n)
		}
	}
	p.sc = newJSONLScanner(paths...)
	return p, nil
}

// jsonlNoValue is the value of a field that is not extracted. Read only.
var jsonlNoValue jsonlValue

// val returns field i's value, kind jsonlAbsent when it is not extracted.
// It points into the scanner rather than copying: a copy reads the value
// back in wider loads than the scanner's stores, which stalls.
func (p *jsonlParser) val(i int) *jsonlValue {
	if k := p.idx[i]; k >= 0 {
		return &p.sc.vals[k]
	}
	return &jsonlNoValue
}

// jsonlUnset reports whether v is an unknown value: absent, null, "" or "-".
func jsonlUnset(v *jsonlValue) bool {
	switch v.kind {
	case jsonlAbsent, jsonlNull:
		return true
	case jsonlString:
		return len(v.raw) == 0 || len(v.raw) == 1 && v.raw[0] == '-'
	}
	return false
}

// text returns a string value for Fields, nil when unset. Other kinds are
// taken as their literal (a numeric status code, say).
func (p *jsonlParser) text(i int) []byte {
	v := p.val(i)
	if jsonlUnset(v) {
		return nil
	}
	return p.sc.str(v)
}

func (p *jsonlParser) fieldError(i int, v *jsonlValue, reason string) *FieldError {
	return &FieldError{Field: p.names[i], Value: string(p.sc.str(v)), Reason: reason}
}

func (p *jsonlParser) Parse(line []byte, s *Sample, f *Fields) error {
	line = bytes.TrimPrefix(line, utf8BOM)
	if err := p.sc.scan(line); err != nil {
		return &FieldError{Reason: err.Error()}
	}
	if p.notRequest != nil {
		if v := p.val(jfLogger); v.kind == jsonlString && bytes.HasPrefix(v.raw, caddyErrorLogger) {
			return caddyErrorEntry // its request is logged by the access log too
		}
	}
	if v := p.val(jfTime); !jsonlUnset(v) {
		t, ok := p.timeOf(v)
		if !ok {
			return p.fieldError(jfTime, v, reasonTime)
		}
		s.Time = t
	}
	if v := p.val(jfStatus); !jsonlUnset(v) {
		b := p.sc.str(v)
		st, ok := 0, false
		if v.kind == jsonlNumber || v.kind == jsonlString {
			st, ok = parseStatus(string(b))
		}
		if !ok {
			return p.fieldError(jfStatus, v, reasonStatus)
		}
		s.Status = st
		s.Censored = st == 0 && p.zeroCensored
	}
	f.Method, f.Path = p.text(jfMethod), p.text(jfPath)
	f.Host, f.Upstream = p.text(jfHost), p.text(jfBackend)

	lat, known, err := p.latency(jfLatency)
	if err != nil {
		return err
	}
	if v := p.val(jfOrigin); p.idx[jfOrigin] >= 0 && (jsonlUnset(v) || string(p.sc.str(v)) == "0") {
		known = false
	}
	if p.envoy == nil {
		switch {
		case known:
			s.Latency = lat
		case p.notRequest != nil:
			if nr := p.notRequest(line, p.text(jfLogger)); nr != "" {
				return nr
			}
			fallthrough
		default:
			s.Excluded = p.noValue
		}
		return nil
	}

	fv := p.val(jfFlags)
	o := envoyOutcome{}
	if !jsonlUnset(fv) {
		o.flags = p.sc.str(fv)
		var ok bool
		if o.class, ok = classifyEnvoyFlags(o.flags); !ok || fv.kind != jsonlString {
			return p.fieldError(jfFlags, fv, "is not a list of response flags")
		}
	}
	mv, pv := p.val(jfMethod), p.val(jfPath)
	o.tcp = mv.kind != jsonlAbsent && pv.kind != jsonlAbsent && jsonlUnset(mv) && jsonlUnset(pv)
	if p.idx[jfDuration] >= 0 { // --latency upstream
		o.upstream, o.upstreamKnown = lat, known
		if o.duration, o.durationKnown, err = p.latency(jfDuration); err != nil {
			return err
		}
	} else {
		o.duration, o.durationKnown = lat, known
	}
	p.envoy.apply(&o, s)
	if s.Excluded == ExcludedNoDuration {
		s.Excluded = p.noValue
	}
	return nil
}

// latency reads field i as a latency; known is false when it is unset.
func (p *jsonlParser) latency(i int) (d time.Duration, known bool, err error) {
	v := p.val(i)
	if jsonlUnset(v) {
		return 0, false, nil
	}
	if v.kind != jsonlNumber && v.kind != jsonlString {
		return 0, false, p.fieldError(i, v, reasonNotNumber)
	}
	b := p.sc.str(v)
	if v.kind == jsonlNumber || jsonlNumeric(b) {
		if p.unit == 0 {
			return 0, false, p.fieldError(i, v, fmt.Sprintf(jsonlReasonNoUnit, usage.Unit))
		}
		if d, ok := plainLatency(b, p.unit); ok {
			return d, true, nil
		}
		if d, ok := envoyDigitsTimes(b, p.unit); ok {
			return d, true, nil
		}
		d, reason := parseLatency(string(b), p.unit)
		if reason != "" {
			return 0, false, p.fieldError(i, v, reason)
		}
		return d, true, nil
	}
	if !p.durations {
		return 0, false, p.fieldError(i, v, reasonNotNumber)
	}
	d, reason := jsonlGoDuration(b)
	if reason != "" {
		return 0, false, p.fieldError(i, v, reason)
	}
	return d, true, nil
}

// jsonlGoDuration reads a duration as time.ParseDuration does ("1.5ms",
// "1m30s", "250µs"), without allocating, and exactly: each part is a decimal
// scaled by its unit. A negative duration is an error (reasonNegative).
func jsonlGoDuration(b []byte) (time.Duration, string) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, b = b[0] == '-', b[1:]
	}
	if string(b) == "0" {
		return 0, ""
	}
	if len(b) == 0 {
		return 0, jsonlReasonNotDuration
	}
	isNum := func(c byte) bool { return c >= '0' && c <= '9' || c == '.' }
	var total int64
	for len(b) > 0 {
		i := 0
		for i < len(b) && isNum(b[i]) {
			i++
		}
		j := i
		for j < len(b) && !isNum(b[j]) {
			j++
		}
		var unit time.Duration
		switch string(b[i:j]) {
		case "ns":
			unit = time.Nanosecond
		case "us", "µs", "μs": // U+00B5 micro sign, U+03BC Greek mu
			unit = time.Microsecond
		case "ms":
			unit = time.Millisecond
		case "s":
			unit = time.Second
		case "m":
			unit = time.Minute
		case "h":
			unit = time.Hour
		default:
			return 0, jsonlReasonNotDuration
		}
		d, ok := parseDecimal(string(b[:i])) // digits and points only
		if !ok {
			return 0, jsonlReasonNotDuration
		}
		n, ok := d.scale(unit)
		if !ok || n > 1<<63-1-total {
			return 0, reasonRange
		}
		total += n
		b = b[j:]
	}
	if neg && total != 0 {
		return 0, reasonNegative
	}
	return time.Duration(total), ""
}

// jsonlNumeric reports whether a string value holds a number: a plain
// decimal (parseDecimal: "12", "0.5", ".5", "+1") or a JSON number with an
// exponent ("1e3"). Unlike isNumber it does not allocate on a non-number.
func jsonlNumeric(b []byte) bool {
	if _, ok := parseDecimal(string(b)); ok {
		return true
	}
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return false
	}
	end, err := jsonlScanNumber(b, 0)
	return err == nil && end == len(b)
}

// timeOf reads a timestamp: an RFC 3339 string, or Unix seconds or
// milliseconds as a number or a numeric string.
func (p *jsonlParser) timeOf(v *jsonlValue) (time.Time, bool) {
	switch v.kind {
	case jsonlString:
		return p.clock.parse(p.sc.str(v))
	case jsonlNumber:
		if d, ok := parseDecimal(string(v.raw)); ok {
			return unixTime(d)
		}
		return parseTime(string(v.raw)) // an exponent
	}
	return time.Time{}, false
}

// newJSONLDecoder returns the decoder of a JSON format.
func newJSONLDecoder(l jsonlLayout, r io.Reader, name string, o Options) (Decoder, error) {
	p, err := newJSONLParser(l, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p.unit == 0 {
		br := bufio.NewReaderSize(r, 64<<10)
		if err := p.checkUnit(br); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r = br
	}
	return newLogDecoder(r, name, o, p)
}

// checkUnit fails when the first line's latency is a number, which needs
// --unit: better one clear error than one per line.
func (p *jsonlParser) checkUnit(br *bufio.Reader) error {
	peek, err := br.Peek(br.Size())
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return err
	}
	for len(peek) > 0 {
		var line []byte
		line, peek, _ = bytes.Cut(peek, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		if p.sc.scan(bytes.TrimPrefix(line, utf8BOM)) != nil {
			return nil // the decoder reports it
		}
		if v := p.val(jfLatency); v.kind == jsonlNumber || v.kind == jsonlString && jsonlNumeric(p.sc.str(v)) {
			return fmt.Errorf("field %q holds numbers (%s on the first line) but no unit was given: pass %s ns, us, ms or s",
				p.names[jfLatency], displayValue(string(p.sc.str(v))), usage.Unit)
		}
		return nil
	}
	return nil
}

// jsonlSniff returns a Sniff function that accepts a JSON object for which
// ok holds, given the values of paths.
func jsonlSniff(ok func(v []jsonlValue) bool, paths ...string) func([]byte) bool {
	return func(line []byte) bool {
		line = bytes.TrimPrefix(line, utf8BOM)
		if len(line) == 0 || line[0] != '{' {
			return false
		}
		sc := newJSONLScanner(paths...)
		return sc.scan(line) == nil && ok(sc.vals)
	}
}

func jsonlFormat(l jsonlLayout, summary string, sniff func([]byte) bool) Format {
	return Format{
		Name:     l.format,
		Summary:  summary,
		Sniff:    sniff,
		Priority: 60, // see Format.Priority
		Flags:    jsonFieldFlags,
		// upstream: the layout's upstream field, or the one --field names.
		Latencies: requestOrUpstream,
		New: func(r io.Reader, name string, o Options) (Decoder, error) {
			return newJSONLDecoder(l, r, name, o)
		},
	}
}

func init() {
	Register(jsonlFormat(jsonlEnvoyLayout,
		"Envoy JSON access log (Istio's field names): duration ms, response_flags; {latency} upstream reads upstream_service_time",
		jsonlSniff(func(v []jsonlValue) bool { return v[0].kind != jsonlAbsent && v[1].kind != jsonlAbsent },
			"response_code", "duration")))
	Register(jsonlFormat(jsonlTraefikLayout,
		"Traefik JSON access log: Duration ns; {latency} upstream reads OriginDuration",
		jsonlSniff(func(v []jsonlValue) bool { return v[0].kind != jsonlAbsent && v[1].kind != jsonlAbsent },
			"Duration", "RequestPath")))
	caddy := jsonlFormat(jsonlCaddyLayout,
		"Caddy JSON access log: duration s, status (0, the client gone, is censored), request.uri",
		jsonlSniff(func(v []jsonlValue) bool {
			return v[0].kind != jsonlAbsent && (v[1].kind == jsonlString || v[2].kind == jsonlObject)
		}, "duration", "logger", "request"))
	caddy.NotRequest = caddyNotRequest
	Register(caddy)
	Register(jsonlFormat(jsonlGenericLayout,
		"JSON lines: {field} names the latency (dotted path), {unit} its unit; {time-field}, {status-field}, {path-field}, {method-field}",
		nil))
}

// Caddy's lines that are not requests (NotRequestError). Caddy writes its
// own messages to the same log as the access log entries unless the access
// log has an output of its own (a Caddyfile "log" without "output file", or
// both on a container's stderr):
//
//	{"level":"info","ts":1796156150.969368,"msg":"using provided configuration","config_file":"Caddyfile",...}
//	{"level":"info","ts":1796156150.9718554,"logger":"http.log","msg":"server running","name":"srv0",...}
//
// and, for a request a handler failed (an upstream that refused the
// connection: 502), an entry of the error log besides the access log's:
//
//	{"level":"error","ts":...,"logger":"http.log.error.log0","msg":"dial tcp ...: connect: connection refused",
//	 "request":{...},"duration":0.000387127,"status":502,"err_id":"v3i4a9kj7",...}
//
// which has a request and a duration too but would count the call twice.
const (
	caddyLogMessage notRequest = "caddy log message"
	caddyErrorEntry notRequest = "caddy error log entry"
)

var caddyErrorLogger = []byte("http.log.error")

// caddyMessage says which of Caddy's lines that are not requests line is,
// given its logger ("" when it has none): an error log entry, or a message
// (level, ts and msg, and no request) of any logger but the access log's.
func caddyMessage(line, logger []byte) notRequest {
	if bytes.HasPrefix(logger, caddyErrorLogger) {
		return caddyErrorEntry
	}
	if bytes.HasPrefix(logger, []byte("http.log.access")) {
		return ""
	}
	sc := newJSONLScanner("level", "ts", "msg", "request", "duration")
	if sc.scan(bytes.TrimPrefix(line, utf8BOM)) != nil {
		return ""
	}
	v := sc.vals
	if v[0].kind == jsonlString && (v[1].kind == jsonlNumber || v[1].kind == jsonlString) && v[2].kind == jsonlString &&
		v[3].kind == jsonlAbsent && v[4].kind == jsonlAbsent {
		return caddyLogMessage
	}
	return ""
}

// caddyNotRequest is Format.NotRequest for caddy.
func caddyNotRequest(line []byte) string {
	line = bytes.TrimPrefix(line, utf8BOM)
	if len(line) == 0 || line[0] != '{' {
		return ""
	}
	sc := newJSONLScanner("logger")
	if sc.scan(line) != nil {
		return ""
	}
	var logger []byte
	if v := &sc.vals[0]; v.kind == jsonlString {
		logger = sc.str(v)
	}
	return string(caddyMessage(line, logger))
}
