package ingest

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// AWS Application Load Balancer access logs ("Access log entries" in the
// Elastic Load Balancing user guide for Application Load Balancers): one
// request per line, fields separated by spaces, some in double quotes:
//
//	type time elb client:port target:port request_processing_time
//	target_processing_time response_processing_time elb_status_code
//	target_status_code received_bytes sent_bytes "request" "user_agent"
//	ssl_cipher ssl_protocol target_group_arn "trace_id" "domain_name"
//	"chosen_cert_arn" matched_rule_priority request_creation_time
//	"actions_executed" "redirect_url" "error_reason" ...
//
// AWS appends fields over time and tells parsers to ignore what follows the
// fields they know; the fields after the request are optional here (logs
// from before 2018 end earlier).
//
// The three processing times are seconds with millisecond precision:
// request_processing_time from receiving the request to sending it to a
// target, target_processing_time from then until the target began its
// response headers, response_processing_time from receiving those headers to
// sending the response. Each is -1 when the load balancer could not dispatch
// the request or the target did not answer before the idle timeout.
//
// The latency (Options.Latency):
//
//   - "request" (the default): the sum of the three, the load balancer's
//     view of the call, as for the other formats;
//   - "upstream" (or "upstream-header"): target_processing_time, the
//     target's time to its response headers.
//
// When a time is -1 and the status says the wait ended because it was long,
// 504 (the target did not answer in time) or 460 (the client closed the
// connection first, ALB's counterpart of nginx's 499), the call is censored
// at time - request_creation_time, how long the load balancer held it: it
// took at least that long. (For "upstream" that bound also holds the few ms
// the load balancer spent before dispatching, which the log does not give.)
// Any other status with a -1 time is an answer that did not wait on a
// target (a redirect or fixed-response rule, no healthy target, a target
// that closed the connection): excluded as "alb redirect", "alb
// fixed-response" or "alb no target response". A censored call without a
// request_creation_time (an old log) is excluded as "alb no duration".
//
// Status is elb_status_code ("-" reads as 0). Sample.Time is
// request_creation_time (when the call began) when the line has it, else
// time. Fields: Method and Path from the request ("GET
// http://host:80/path HTTP/1.1"; the grouper strips the scheme and host);
// Host from the request URL (the client's Host header) without the port,
// else domain_name (the TLS SNI); Upstream is the name in target_group_arn
// ("arn:...:targetgroup/NAME/id"), not target:port, because a timeout is set
// per service and the targets of a group are interchangeable.
type albParser struct {
	target bool // Latency "upstream": target_processing_time only
}

// The fields of an ALB line by position.
const (
	albType = iota
	albTime
	albELB
	albClient
	albTarget
	albRequestTime
	albTargetTime
	albResponseTime
	albStatus
	albTargetStatus
	albReceived
	albSent
	albRequest
	albUserAgent
	albCipher
	albProtocol
	albTargetGroup
	albTrace
	albDomain
	albCert
	albRule
	albCreated
	albActions
	albFields // fields the parser reads; more are ignored
)

// albMinFields is how many fields a line needs: through the request.
const albMinFields = albRequest + 1

// Exclusion reasons of ALB lines.
const (
	albNoTarget      = "alb no target response"
	albRedirect      = "alb redirect"
	albFixedResponse = "alb fixed-response"
	albNoDuration    = "alb no duration"
)

var albTimeNames = [3]string{"request_processing_time", "target_processing_time", "response_processing_time"}

// upstreamLatencies are the Latencies of formats with two measures, the
// request's (the default) and the upstream's, to its response headers
// (upstream-header says the same).
var upstreamLatencies = []string{"request", "upstream", "upstream-header"}

// upstreamMeasure reads Options.Latency for the formats of
// upstreamLatencies (CheckLatency): it reports whether the upstream's
// measure is asked for.
func upstreamMeasure(format, latency string) (upstream bool, err error) {
	if err := CheckLatency(format, latency); err != nil {
		return false, err
	}
	return latency == "upstream" || latency == "upstream-header", nil
}

func newALB(r io.Reader, name string, o Options) (Decoder, error) {
	target, err := upstreamMeasure("alb", o.Latency)
	if err != nil {
		return nil, err
	}
	return newLogDecoder(r, name, o, &albParser{target: target})
}

func init() {
	Register(Format{
		Name:      "alb",
		Priority:  20,
		Summary:   "AWS Application Load Balancer access logs: the three processing times (or target_processing_time with {latency} upstream)",
		Sniff:     sniffALB,
		Latencies: upstreamLatencies,
		New:       newALB,
	})
}

// sniffALB accepts a line starting with an ALB request type, an RFC 3339
// time and a load balancer id "app/...", that parses.
func sniffALB(line []byte) bool {
	typ, rest := hapToken(line)
	switch string(typ) {
	case "http", "https", "h2", "grpcs", "ws", "wss":
	default:
		return false
	}
	_, rest = hapToken(rest)
	if elb, _ := hapToken(rest); !bytes.HasPrefix(elb, []byte("app/")) {
		return false
	}
	var s Sample
	var f Fields
	return (&albParser{}).Parse(line, &s, &f) == nil
}

// Parse reads one ALB line; see albParser.
func (p *albParser) Parse(line []byte, s *Sample, f *Fields) error {
	var fields [albFields][]byte
	n := 0
	for rest := line; n < albFields; n++ {
		var ok bool
		fields[n], rest, ok = albField(rest)
		if !ok {
			break
		}
	}
	if n < albMinFields {
		return &FieldError{Reason: fmt.Sprintf("has %d fields, want at least %d (type time elb client target three times statuses bytes \"request\")", n, albMinFields)}
	}

	t, ok := albParseTime(fields[albTime])
	if !ok {
		return &FieldError{Field: "time", Value: string(fields[albTime]), Reason: reasonTime}
	}
	s.Time = t
	var created time.Time
	if n > albCreated && !albDash(fields[albCreated]) {
		if created, ok = albParseTime(fields[albCreated]); !ok {
			return &FieldError{Field: "request_creation_time", Value: string(fields[albCreated]), Reason: reasonTime}
		}
		s.Time = created
	}

	var secs [3]time.Duration
	unanswered := false
	for i := range secs {
		v := fields[albRequestTime+i]
		if len(v) == 2 && v[0] == '-' && v[1] == '1' {
			unanswered = true
			secs[i] = -1
			continue
		}
		d, reason := albSeconds(v)
		if reason != "" {
			return &FieldError{Field: albTimeNames[i], Value: string(v), Reason: reason}
		}
		secs[i] = d
	}

	st, ok := hapStatus(fields[albStatus])
	if !ok && !albDash(fields[albStatus]) {
		return &FieldError{Field: "elb_status_code", Value: string(fields[albStatus]), Reason: reasonStatus}
	}
	s.Status = st

	f.Method, f.Path = hapRequestLine(fields[albRequest])
	f.Host = albURLHost(f.Path)
	if len(f.Host) == 0 && n > albDomain && !albDash(fields[albDomain]) {
		f.Host = fields[albDomain]
	}
	if n > albTargetGroup {
		f.Upstream = albTargetGroupName(fields[albTargetGroup])
	}

	switch {
	case p.target && secs[1] >= 0:
		s.Latency = secs[1]
	case !p.target && !unanswered:
		s.Latency = secs[0] + secs[1] + secs[2]
	case st == 504 || st == 460:
		if created.IsZero() || t.Before(created) {
			s.Excluded = albNoDuration
			return nil
		}
		s.Latency = t.Sub(created)
		s.Censored = true
	case n > albActions && bytes.Contains(fields[albActions], []byte("redirect")):
		s.Excluded = albRedirect
	case n > albActions && bytes.Contains(fields[albActions], []byte("fixed-response")):
		s.Excluded = albFixedResponse
	default:
		s.Excluded = albNoTarget
	}
	return nil
}

// albField returns the next field of an ALB line without its quotes, what
// follows it, and false at the end of the line. A quoted field ends at a
// quote followed by a space or the end of the line, so quotes inside it (a
// user agent's) are kept.
func albField(b []byte) (field, rest []byte, ok bool) {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	if len(b) == 0 {
		return nil, nil, false
	}
	if b[0] != '"' {
		if i := bytes.IndexByte(b, ' '); i >= 0 {
			return b[:i], b[i:], true
		}
		return b, nil, true
	}
	for i := 1; i < len(b); i++ {
		if b[i] == '"' && (i == len(b)-1 || b[i+1] == ' ') {
			return b[1:i], b[i+1:], true
		}
	}
	return b[1:], nil, true // unterminated: the rest of the line
}

func albDash(b []byte) bool { return len(b) == 1 && b[0] == '-' }

// albSeconds reads a non-negative decimal number of seconds.
func albSeconds(b []byte) (time.Duration, string) {
	if len(b) == 0 {
		return 0, reasonEmpty
	}
	if len(b) <= 32 { // the common case, without allocating
		if d, ok := parseDecimal(string(b)); ok {
			if d.neg && !d.isZero() {
				return 0, reasonNegative
			}
			n, ok := d.scale(time.Second)
			if !ok {
				return 0, reasonRange
			}
			return time.Duration(n), ""
		}
	}
	return parseLatency(string(b), time.Second)
}

// albURLHost returns the host of an absolute request target
// ("http://host:80/x" -> "host"), or nil.
func albURLHost(target []byte) []byte {
	i := bytes.Index(target, []byte("://"))
	if i < 0 || i > 10 {
		return nil
	}
	host := target[i+3:]
	if j := bytes.IndexAny(host, "/?#"); j >= 0 {
		host = host[:j]
	}
	if j := bytes.LastIndexByte(host, ':'); j >= 0 && bytes.IndexByte(host[j:], ']') < 0 {
		host = host[:j]
	}
	return host
}

// albTargetGroupName returns NAME from
// "arn:aws:elasticloadbalancing:region:account:targetgroup/NAME/id", the
// field itself when it is not such an ARN, or nil for "-".
func albTargetGroupName(arn []byte) []byte {
	if albDash(arn) {
		return nil
	}
	i := bytes.Index(arn, []byte(":targetgroup/"))
	if i < 0 {
		return arn
	}
	name := arn[i+len(":targetgroup/"):]
	if j := bytes.IndexByte(name, '/'); j >= 0 {
		name = name[:j]
	}
	return name
}

// albParseTime reads "2006-01-02T15:04:05.999999999Z07:00" (a space for the
// T, any number of fraction digits) without allocating; other forms go to
// parseTime.
func albParseTime(b []byte) (time.Time, bool) {
	// 2006-01-02T15:04:05
	// 0123456789012345678
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') ||
		b[13] != ':' || b[16] != ':' {
		return albParseTimeSlow(b)
	}
	year, ok1 := hapDigits4(b[0:4])
	month, ok2 := hapDigits2(b[5:7])
	day, ok3 := hapDigits2(b[8:10])
	hour, ok4 := hapDigits2(b[11:13])
	minute, ok5 := hapDigits2(b[14:16])
	sec, ok6 := hapDigits2(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || !hapValidClock(year, month, day, hour, minute, sec) {
		return albParseTimeSlow(b)
	}
	i, nanos := 19, 0
	if b[i] == '.' {
		i++
		start := i
		scale := int(time.Second)
		for i < len(b) && hapDigit(b[i]) {
			if scale > 1 {
				scale /= 10
				nanos += int(b[i]-'0') * scale
			}
			i++
		}
		if i == start {
			return albParseTimeSlow(b)
		}
	}
	offset := 0
	switch {
	case i == len(b)-1 && (b[i] == 'Z' || b[i] == 'z'):
	case i == len(b)-6 && (b[i] == '+' || b[i] == '-') && b[i+3] == ':':
		oh, ok1 := hapDigits2(b[i+1 : i+3])
		om, ok2 := hapDigits2(b[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return albParseTimeSlow(b)
		}
		offset = (oh*60 + om) * 60
		if b[i] == '-' {
			offset = -offset
		}
	default:
		return albParseTimeSlow(b)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), true
}

// albParseTimeSlow is parseTime for what the fast path does not read.
func albParseTimeSlow(b []byte) (time.Time, bool) {
	if len(b) == 0 || len(b) > 64 {
		return time.Time{}, false
	}
	return parseTime(string(b))
}
