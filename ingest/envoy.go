package ingest

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// Envoy's default access log format, from Envoy's documentation
// (configuration/observability/access_log/usage, "Default Format String";
// unchanged from v1.5 to the current release):
//
//	[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
//	%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
//	%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%"
//	"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"
//
// for example
//
//	[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"
//
// The decoder also reads Istio's text format (istio/istio
// pilot/pkg/model/telemetry_logging.go, EnvoyTextLogFormat), which puts
// %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS%
// "%UPSTREAM_TRANSPORT_FAILURE_REASON%" between the flags and the byte
// counts and appends %UPSTREAM_CLUSTER_RAW% and five more fields: it tells the
// two apart by whether the field after the flags is a byte count. Fields
// after "%UPSTREAM_HOST%" are ignored, so formats that append fields read too.
//
// Envoy writes "-" for an unset value and does not escape quotes inside
// quoted fields. A quoted field therefore ends at a quote followed by a space
// or the end of the line, and one followed by another quoted field at `" "`:
// a user agent holding `" "` shifts the fields after it (:AUTHORITY and
// UPSTREAM_HOST, used only for grouping).
//
// The upstream time has no operator of its own (there is no
// %UPSTREAM_SERVICE_TIME%, docs/method.md#11-sources-of-latency): its default format logs the x-envoy-upstream-service-time
// response header, which the router sets from the upstream's response
// headers, so it is "-" when no upstream answered.

// The response flags (%RESPONSE_FLAGS%, a comma-separated list, "-" for
// none; the list in Envoy's usage.rst and source/common/stream_info/utility.h)
// decide what a line's duration means. By class:
//
//	class        flags                                     sample
//	timeout      UT  upstream request timeout (504)        Censored: took at least DURATION
//	             SI  stream idle timeout (408)
//	             DT  max connection/stream duration reached
//	             UMSDR upstream max stream duration reached
//	client gone  DC  downstream connection termination     Censored, as nginx 499
//	             DR  downstream remote reset
//	failure      UH  no healthy upstream (503)             Excluded "envoy FLAGS"
//	             UF  upstream connection failure (503)
//	             UO  upstream overflow, circuit breaking (503)
//	             NR  no route (404) or no filter chain
//	             URX upstream retry limit / max connect attempts reached
//	             NC  upstream cluster not found
//	             LH  local service failed health check (503)
//	             LR  connection local reset (503)
//	             UR  upstream remote reset (503)
//	             UC  upstream connection termination (503)
//	             FI  aborted by fault injection
//	             RL  rate limited locally (429)
//	             UAEX denied by external authorization
//	             RLSE rate limit service error
//	             IH  invalid strictly-checked header (400)
//	             DPE downstream protocol error
//	             UPE upstream protocol error
//	             NFCF no filter config found
//	             OM  overload manager terminated the request
//	             DF  DNS resolution failed
//	             DO  dropped by drop_overload
//	             (any flag not in this table)
//	distorted    DI  delayed by fault injection            Excluded "envoy DI": the delay is artificial
//	none         RFCF response from the cache filter       a plain sample
//
// When flags of several classes are present, timeout wins over failure (UT,URX:
// every try timed out, so the call was slow, not fast-failing), and failure
// over client gone. The Excluded reason is "envoy " and the flags as logged
// (Envoy writes them in a fixed order), e.g. "envoy UF,URX". Long flag names
// (%RESPONSE_FLAGS_LONG%: UpstreamRequestTimeout, ...) are read as the short
// ones. A flag that is not a run of letters makes the line a *ParseError.
//
// A TCP proxy entry (request line "- - -") measures a whole downstream
// connection, not a call: without failure flags it is excluded as "envoy tcp
// connection"; with them, by its flags.
//
// Latency "request" (the default) is %DURATION%, from the first byte of the
// request to the last byte of the response. Latency "upstream" is the
// upstream service time; when it is "-" the sample is excluded as "no
// upstream time", except after a timeout or a client going away, where the
// upstream never answered: then DURATION is the censored value. That slightly
// overstates the upstream's share by the time spent reading the request (the
// route timeout starts once the request is complete), which is small for the
// bodiless requests that usually time out.

// Reasons for Sample.Excluded set by the Envoy decoders.
const (
	ExcludedEnvoyTCP     = "envoy tcp connection"
	ExcludedNoDuration   = "no duration"
	excludedEnvoyPrefix  = "envoy "
	maxEnvoyReasons      = 1000
	envoyLatencyRequest  = "request"
	envoyLatencyUpstream = "upstream"
)

// requestOrUpstream are the Latencies of Envoy's and the JSON formats.
var requestOrUpstream = []string{envoyLatencyRequest, envoyLatencyUpstream}

type envoyFlagClass uint8

const (
	envoyClassInfo envoyFlagClass = 1 << iota
	envoyClassTimeout
	envoyClassGone
	envoyClassFailure
)

// envoyFlags maps each response flag, short and long name, to its class;
// flags not listed are failures.
var envoyFlags = func() map[string]envoyFlagClass {
	m := map[string]envoyFlagClass{}
	add := func(c envoyFlagClass, short, long string) { m[short], m[long] = c, c }
	add(envoyClassTimeout, "UT", "UpstreamRequestTimeout")
	add(envoyClassTimeout, "SI", "StreamIdleTimeout")
	add(envoyClassTimeout, "DT", "DurationTimeout")
	add(envoyClassTimeout, "UMSDR", "UpstreamMaxStreamDurationReached")
	add(envoyClassGone, "DC", "DownstreamConnectionTermination")
	add(envoyClassGone, "DR", "DownstreamRemoteReset")
	add(envoyClassInfo, "RFCF", "ResponseFromCacheFilter")
	for _, f := range [][2]string{
		{"UH", "NoHealthyUpstream"}, {"UF", "UpstreamConnectionFailure"}, {"UO", "UpstreamOverflow"},
		{"NR", "NoRouteFound"}, {"URX", "UpstreamRetryLimitExceeded"}, {"NC", "NoClusterFound"},
		{"LH", "FailedLocalHealthCheck"}, {"LR", "LocalReset"}, {"UR", "UpstreamRemoteReset"},
		{"UC", "UpstreamConnectionTermination"}, {"FI", "FaultInjected"}, {"RL", "RateLimited"},
		{"UAEX", "UnauthorizedExternalService"}, {"RLSE", "RateLimitServiceError"},
		{"IH", "InvalidEnvoyRequestHeaders"}, {"DPE", "DownstreamProtocolError"},
		{"UPE", "UpstreamProtocolError"}, {"NFCF", "NoFilterConfigFound"},
		{"OM", "OverloadManagerTerminated"}, {"DF", "DnsResolutionFailed"}, {"DO", "DropOverload"},
		{"DI", "DelayInjected"},
	} {
		add(envoyClassFailure, f[0], f[1])
	}
	return m
}()

// classifyEnvoyFlags returns the union of the classes of a flag list; ok is
// false when it is not a comma-separated list of letter runs. "-", "" and
// "null" are no flags.
func classifyEnvoyFlags(flags []byte) (c envoyFlagClass, ok bool) {
	if len(flags) == 0 || len(flags) == 1 && flags[0] == '-' {
		return 0, true
	}
	for len(flags) > 0 {
		i := bytes.IndexByte(flags, ',')
		if i < 0 {
			i = len(flags)
		}
		f := flags[:i]
		if len(f) == 0 {
			return 0, false
		}
		for _, b := range f {
			if !('A' <= b && b <= 'Z' || 'a' <= b && b <= 'z') {
				return 0, false
			}
		}
		if fc, known := envoyFlags[string(f)]; known {
			c |= fc
		} else {
			c |= envoyClassFailure
		}
		if i < len(flags) {
			i++
			if i == len(flags) {
				return 0, false // trailing comma
			}
		}
		flags = flags[i:]
	}
	return c, true
}

// envoyOutcome is what the Envoy decoders, text and JSON, know of one call.
type envoyOutcome struct {
	duration, upstream           time.Duration
	durationKnown, upstreamKnown bool
	flags                        []byte
	class                        envoyFlagClass
	tcp                          bool
}

// envoyRules turns an envoyOutcome into a Sample's latency, censoring and
// exclusion (see the table above).
type envoyRules struct {
	upstream bool              // Latency "upstream"
	reasons  map[string]string // interned "envoy FLAGS" reasons
}

func newEnvoyRules(format, latency string) (envoyRules, error) {
	if err := CheckLatency(format, latency); err != nil {
		return envoyRules{}, err
	}
	return envoyRules{reasons: map[string]string{}, upstream: latency == envoyLatencyUpstream}, nil
}

// reason returns "envoy " + flags, the same string for the same flags.
func (r *envoyRules) reason(flags []byte) string {
	if s, ok := r.reasons[string(flags)]; ok {
		return s
	}
	s := excludedEnvoyPrefix + string(flags)
	if len(r.reasons) < maxEnvoyReasons {
		r.reasons[s[len(excludedEnvoyPrefix):]] = s
	}
	return s
}

func (r *envoyRules) apply(o *envoyOutcome, s *Sample) {
	timeout := o.class&envoyClassTimeout != 0
	slow := timeout || o.class&envoyClassGone != 0
	switch {
	case o.class&envoyClassFailure != 0 && !timeout:
		s.Excluded = r.reason(o.flags)
	case o.tcp:
		s.Excluded = ExcludedEnvoyTCP
	}
	switch {
	case r.upstream && o.upstreamKnown:
		s.Latency = o.upstream
	case r.upstream && slow && o.durationKnown:
		s.Latency, s.Censored = o.duration, true
	case r.upstream:
		s.Latency = o.duration
		if s.Excluded == "" {
			s.Excluded = ExcludedNoUpstream
		}
	case o.durationKnown:
		s.Latency, s.Censored = o.duration, slow
	default:
		if s.Excluded == "" {
			s.Excluded = ExcludedNoDuration
		}
	}
	if s.Excluded != "" {
		s.Censored = false
	}
}

// envoyParser is the LineParser of Envoy's default text format.
type envoyParser struct {
	rules envoyRules
	clock envoyClock
}

func newEnvoyParser(o Options) (*envoyParser, error) {
	rules, err := newEnvoyRules("envoy", o.Latency)
	if err != nil {
		return nil, err
	}
	return &envoyParser{rules: rules}, nil
}

// envoyToken returns b up to the first space and the rest after it.
func envoyToken(b []byte) (tok, rest []byte) {
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// envoyQuoted reads a quoted field at the start of b: up to a quote followed
// by a space or the end of b, or, when another quoted field follows
// (beforeQuoted), up to `" "`, so that a user agent holding `" ` is read
// whole. ok is false when b does not start with a quoted field.
func envoyQuoted(b []byte, beforeQuoted bool) (field, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != '"' {
		return nil, b, false
	}
	if beforeQuoted {
		if i := bytes.Index(b[1:], []byte(`" "`)); i >= 0 {
			return b[1 : 1+i], b[i+3:], true
		}
	}
	if i := bytes.Index(b[1:], []byte(`" `)); i >= 0 {
		return b[1 : 1+i], b[i+3:], true
	}
	if b[len(b)-1] == '"' {
		return b[1 : len(b)-1], nil, true
	}
	return nil, b, false
}

func envoyAllDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// envoyDash returns nil for Envoy's "-" (unset), else b.
func envoyDash(b []byte) []byte {
	if len(b) == 1 && b[0] == '-' {
		return nil
	}
	return b
}

func (p *envoyParser) Parse(line []byte, s *Sample, f *Fields) error {
	if len(line) == 0 || line[0] != '[' {
		return &FieldError{Reason: "is not an Envoy access log line: it does not start with [START_TIME]"}
	}
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return &FieldError{Reason: "is not an Envoy access log line: no ] after [START_TIME"}
	}
	ts := line[1:end]
	t, ok := p.clock.parse(ts)
	if !ok {
		return &FieldError{Field: "start_time", Value: string(ts), Reason: reasonTime}
	}
	s.Time = t
	rest := line[end+1:]
	if len(rest) < 2 || rest[0] != ' ' {
		return &FieldError{Reason: "ends after [START_TIME]: not Envoy's default format"}
	}
	method, path, proto, rest, err := envoyRequest(rest[1:])
	if err != nil {
		return err
	}
	f.Method, f.Path = method, path

	code, rest := envoyToken(rest)
	st, ok := parseStatus(string(code))
	if !ok {
		return &FieldError{Field: "response_code", Value: string(code), Reason: reasonStatus}
	}
	s.Status = st
	flags, rest := envoyToken(rest)
	class, ok := classifyEnvoyFlags(flags)
	if !ok {
		return &FieldError{Field: "response_flags", Value: string(flags), Reason: "is not a list of response flags"}
	}

	next, after := envoyToken(rest)
	if len(next) > 0 && !envoyAllDigits(next) {
		// Istio: %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "%UPSTREAM_TRANSPORT_FAILURE_REASON%"
		_, after = envoyToken(after)
		if _, after, ok = envoyQuoted(after, false); !ok {
			return &FieldError{Field: "bytes_received", Value: string(next), Reason: reasonNotNumber}
		}
		rest = after
	}
	var fields [4][]byte // bytes received, bytes sent, duration, upstream service time
	names := [4]string{"bytes_received", "bytes_sent", "duration", "upstream_service_time"}
	for i := range fields {
		if len(rest) == 0 {
			return &FieldError{Reason: fmt.Sprintf("ends before %s: not Envoy's default format", names[i])}
		}
		fields[i], rest = envoyToken(rest)
	}
	for i := range 2 {
		if !envoyAllDigits(fields[i]) {
			return &FieldError{Field: names[i], Value: string(fields[i]), Reason: reasonNotNumber}
		}
	}
	o := envoyOutcome{flags: flags, class: class, tcp: method == nil && path == nil && proto == nil}
	if o.duration, o.durationKnown, err = envoyMillis(names[2], fields[2]); err != nil {
		return err
	}
	if o.upstream, o.upstreamKnown, err = envoyMillis(names[3], fields[3]); err != nil {
		return err
	}

	// "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"
	var q [5][]byte
	for i := range q {
		if q[i], rest, ok = envoyQuoted(rest, i < len(q)-1); !ok {
			break
		}
	}
	f.Host, f.Upstream = envoyDash(q[3]), envoyDash(q[4])
	p.rules.apply(&o, s)
	return nil
}

// envoyRequest reads the quoted request line at the start of b,
// "METHOD PATH PROTOCOL": neither the method nor the path holds a space (an
// HTTP codec rejects them), so they end at spaces and a quote in the path
// is read as part of it. "-" reads as nil.
func envoyRequest(b []byte) (method, path, proto, rest []byte, err error) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, nil, nil, &FieldError{Reason: `has no quoted request line ("METHOD PATH PROTOCOL") after [START_TIME]`}
	}
	method, req, ok1 := bytes.Cut(b[1:], []byte(" "))
	path, req, ok2 := bytes.Cut(req, []byte(" "))
	proto, rest, ok3 := bytes.Cut(req, []byte(`"`))
	if !ok1 || !ok2 || !ok3 || len(rest) > 0 && rest[0] != ' ' {
		shown, _, _ := envoyQuoted(b, false)
		if shown == nil {
			shown, _ = envoyToken(b[1:])
		}
		return nil, nil, nil, nil, &FieldError{Field: "request", Value: string(shown), Reason: "is not METHOD PATH PROTOCOL"}
	}
	if len(rest) > 0 {
		rest = rest[1:]
	}
	return envoyDash(method), envoyDash(path), envoyDash(proto), rest, nil
}

// envoyMillis reads a whole number of milliseconds; "-" is unknown.
func envoyMillis(field string, b []byte) (time.Duration, bool, error) {
	if len(b) == 1 && b[0] == '-' {
		return 0, false, nil
	}
	if d, ok := envoyDigitsTimes(b, time.Millisecond); ok {
		return d, true, nil
	}
	d, reason := parseLatency(string(b), time.Millisecond)
	if reason != "" {
		return 0, false, &FieldError{Field: field, Value: string(b), Reason: reason}
	}
	return d, true, nil
}

// envoyDigitsTimes reads a run of at most 15 digits as a count of unit, without
// overflow for any unit up to an hour.
func envoyDigitsTimes(b []byte, unit time.Duration) (time.Duration, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if unit > time.Hour || n > (1<<63-1)/int64(unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// sniffEnvoy accepts a line that parses as Envoy's default format with all
// five quoted fields.
func sniffEnvoy(line []byte) bool {
	if len(line) < 30 || line[0] != '[' || line[11] != 'T' {
		return false
	}
	p := &envoyParser{rules: envoyRules{reasons: map[string]string{}}}
	var s Sample
	var f Fields
	if p.Parse(line, &s, &f) != nil {
		return false
	}
	return bytes.Count(line, []byte(`"`)) >= 12
}

func newEnvoyDecoder(r io.Reader, name string, o Options) (Decoder, error) {
	p, err := newEnvoyParser(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return newLogDecoder(r, name, o, p)
}

func init() {
	Register(Format{
		Name:      "envoy",
		Priority:  20,
		Summary:   "Envoy's default text access log (also Istio's); {latency} request (%DURATION%) or upstream (x-envoy-upstream-service-time)",
		Sniff:     sniffEnvoy,
		Latencies: requestOrUpstream,
		New:       newEnvoyDecoder,
	})
}
