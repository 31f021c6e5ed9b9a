package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/nginxconf"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// nginx access logs.
//
// nginx writes its access log in a format the user defines with log_format,
// so the decoder compiles that format (see compileNginx) rather than
// assuming one layout. The format comes from --log-format, or from the
// log_format directive named --log-format-name in the config --nginx-conf
// (see readNginxConf). Without either, the decoder recognises one family of
// lines by their shape: nginx's combined format followed by $request_time
// and optionally $upstream_response_time, the usual way to add timing to
// it. Anything else needs the format: guessing which number of a custom
// layout is the latency would be wrong too often to be worth it.

// nginxCombined is nginx's predefined combined format
// (ngx_http_log_module.c).
const nginxCombined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`

// combinedOrigin names the built-in combined format in errors.
const combinedOrigin = "nginx's combined format"

// The layouts the nginx decoder recognises without a format.
const (
	nginxCombinedTimed         = nginxCombined + ` $request_time`
	nginxCombinedTimedUpstream = nginxCombined + ` $request_time $upstream_response_time`
)

// ingressUpstreamInfo is ingress-nginx's default log format, upstreaminfo
// (docs/user-guide/nginx-configuration/log-format.md of kubernetes/ingress-nginx).
const ingressUpstreamInfo = `$remote_addr - $remote_user [$time_local] "$request" ` +
	`$status $body_bytes_sent "$http_referer" "$http_user_agent" ` +
	`$request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr ` +
	`$upstream_response_length $upstream_response_time $upstream_status $req_id`

// nginxLists are the variables nginx writes as lists, one entry per upstream
// server tried (", " between servers, " : " across internal redirects).
var nginxLists = []string{
	"upstream_addr", "upstream_bytes_received", "upstream_bytes_sent", "upstream_connect_time",
	"upstream_header_time", "upstream_queue_time", "upstream_response_length", "upstream_response_time",
	"upstream_status",
}

// nginxMeasure is one value of Options.Latency for nginx logs.
type nginxMeasure struct {
	name, variable string
	agg            logAggregate
}

// nginxMeasures are the values of Options.Latency for nginx logs: the
// variable each reads and how a list of tries becomes one latency.
var nginxMeasures = []nginxMeasure{
	{"request", "request_time", aggSum},
	{"upstream", "upstream_response_time", aggSum},
	{"upstream-last", "upstream_response_time", aggLast},
	{"upstream-header", "upstream_header_time", aggSum},
}

// nginxLatencies are the names of nginxMeasures, the Latencies of nginx
// and ingress-nginx.
func nginxLatencies() []string {
	names := make([]string, len(nginxMeasures))
	for i, m := range nginxMeasures {
		names[i] = m.name
	}
	return names
}

// nginxFormat is a log format to compile and how to name it in errors.
type nginxFormat struct {
	text   string // the format, the quoted parts of log_format joined
	escape string // "default", "json" or "none"
	origin string // usage.LogFormat's flag, `log_format "main" in nginx.conf:12`, ...
}

// parseNginxFormat splits a format string into its leading literal and its
// variables, each with the literal after it, the way nginx's
// ngx_http_log_compile_format reads it: $name or ${name}, a name of
// letters, digits and underscores.
func parseNginxFormat(format string) (prefix []byte, vars []logItem, err error) {
	lit := []byte{}
	i := 0
	for i < len(format) {
		c := format[i]
		if c != '$' {
			lit = append(lit, c)
			i++
			continue
		}
		i++
		bracket := i < len(format) && format[i] == '{'
		if bracket {
			i++
		}
		start := i
		for i < len(format) && isNginxNameByte(format[i]) {
			i++
		}
		name := format[start:i]
		if bracket {
			if i >= len(format) || format[i] != '}' {
				return nil, nil, fmt.Errorf("the closing bracket of ${%s is missing", name)
			}
			i++
		}
		if name == "" {
			return nil, nil, fmt.Errorf("a $ at offset %d is not followed by a variable name", start-1)
		}
		if len(vars) == 0 {
			prefix = lit
		} else {
			vars[len(vars)-1].lit = lit
		}
		lit = []byte{}
		vars = append(vars, logItem{name: "$" + name, key: strings.ToLower(name)})
	}
	if len(vars) == 0 {
		return lit, nil, nil
	}
	vars[len(vars)-1].lit = lit
	return prefix, vars, nil
}

func isNginxNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// compileNginx compiles an nginx log format into a LineParser for the
// measure named latency (Options.Latency; "" is "request").
//
// The values used: the measure's variable ($request_time, or
// $upstream_response_time summed or its last try, or $upstream_header_time
// summed), $upstream_connect_time summed over tries (Sample.Connect),
// $status, the time from $msec, $time_iso8601 or $time_local (first found in
// that order), the method from $request_method or $request, the request
// target from $request_uri, $request or $uri, the host from $host,
// $http_host or $server_name, the upstream from $proxy_upstream_name
// (ingress-nginx) or the last address of $upstream_addr. Every other
// variable is read past and ignored.
func compileNginx(nf nginxFormat, latency string) (*logLayout, error) {
	if err := CheckLatency("nginx", latency); err != nil {
		return nil, err
	}
	if latency == "" {
		latency = "request"
	}
	measure := nginxMeasures[slices.IndexFunc(nginxMeasures, func(m nginxMeasure) bool { return m.name == latency })]

	prefix, vars, err := parseNginxFormat(nf.text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nf.describe(), err)
	}
	has := func(name string) int {
		return slices.IndexFunc(vars, func(v logItem) bool { return v.key == name })
	}
	if has(measure.variable) < 0 {
		return nil, nf.missingLatency(vars, measure.variable, latency)
	}

	fields := make([]logField, len(vars))
	for i, v := range vars {
		fields[i] = logField{name: v.name[1:], list: slices.Contains(nginxLists, v.key)}
		if v.key == "time_local" {
			fields[i].width = len("07/Feb/2020:11:48:51 +0000")
		}
	}
	// first returns the index of the first variable among names, in their
	// order of preference, or -1.
	first := func(names ...string) int {
		for _, n := range names {
			if i := has(n); i >= 0 {
				return i
			}
		}
		return -1
	}

	lat := claim(fields, has(measure.variable), roleLatency)
	lat.unit, lat.agg = time.Second, measure.agg
	if measure.variable != "request_time" {
		lat.noValue = ExcludedNoUpstream
	}
	if c := claim(fields, has("upstream_connect_time"), roleConnect); c != nil {
		c.unit = time.Second
	}
	claim(fields, has("status"), roleStatus)
	switch i := first("msec", "time_iso8601", "time_local"); {
	case i < 0:
	case vars[i].key == "msec":
		claim(fields, i, roleTimeUnix).unit = time.Second
	case vars[i].key == "time_iso8601":
		claim(fields, i, roleTimeISO)
	default:
		claim(fields, i, roleTimeCLF)
	}
	if i := has("request_method"); i >= 0 {
		claim(fields, i, roleMethod)
	} else if r := claim(fields, has("request"), roleRequest); r != nil {
		r.method = true
	}
	switch i := first("request_uri", "request", "uri"); {
	case i < 0:
	case vars[i].key == "request":
		r := claim(fields, i, roleRequest)
		r.path = true
	default:
		claim(fields, i, rolePath)
	}
	claim(fields, first("host", "http_host", "server_name"), roleHost)
	if i := has("proxy_upstream_name"); i >= 0 {
		claim(fields, i, roleUpstreamName)
	} else {
		claim(fields, has("upstream_addr"), roleUpstream)
	}

	l, err := newLogLayout(prefix, vars, fields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nf.describe(), err)
	}
	l.backslash = nf.escape != "none"
	return l, nil
}

// describe names the format in errors, with its text.
func (nf nginxFormat) describe() string {
	return fmt.Sprintf("%s (%q)", nf.origin, nf.text)
}

// missingLatency explains that the format lacks the measure's variable and
// what to do about it.
func (nf nginxFormat) missingLatency(vars []logItem, variable, latency string) error {
	if nf.text == nginxCombined {
		what := nf.origin + " is nginx's combined format, which"
		if nf.origin == combinedOrigin {
			what = combinedOrigin
		}
		return fmt.Errorf("%s records no latency. Add $request_time (and $upstream_response_time, "+
			"$upstream_connect_time) to a log_format of your own, e.g.\n  log_format timed '%s $request_time $upstream_connect_time $upstream_response_time';\n"+
			"  access_log /var/log/nginx/access.log timed;\nand pass it with %s or %s FILE %s timed",
			what, nginxCombined, usage.LogFormat, usage.NginxConf, usage.LogFormatName)
	}
	if len(vars) == 0 && strings.Contains(nf.text, "%") {
		return fmt.Errorf("%s has no nginx variable ($name); it looks like an Apache LogFormat: use %s apache", nf.describe(), usage.Input)
	}
	var others []string
	for _, m := range nginxMeasures {
		if m.variable != variable && slices.ContainsFunc(vars, func(v logItem) bool { return v.key == m.variable }) {
			others = append(others, fmt.Sprintf("%s %s ($%s)", usage.Latency, m.name, m.variable))
		}
	}
	hint := "add $" + variable + " to the log_format"
	if len(others) > 0 {
		hint = "add it, or choose a measure the format has: " + strings.Join(others, ", ")
	}
	return fmt.Errorf("%s has no $%s, which %s %s needs: %s", nf.describe(), variable, usage.Latency, latency, hint)
}

// nginxFormatOf returns the format the options name: --log-format, or
// --log-format-name in --nginx-conf (the built-in combined without a
// config). ok is false when the options name none.
func nginxFormatOf(o Options) (nf nginxFormat, ok bool, err error) {
	switch {
	case o.LogFormat != "" && o.NginxConf != "":
		return nf, false, fmt.Errorf("give the log format either with %s or with %s, not both", usage.LogFormat, usage.NginxConf)
	case o.LogFormat != "":
		nf, err = nginxFormatFlag(o.LogFormat)
		return nf, err == nil, err
	case o.NginxConf != "":
		nf, err = readNginxConf(o.NginxConf, o.LogFormatName)
		return nf, err == nil, err
	case o.LogFormatName == "combined":
		return nginxFormat{text: nginxCombined, escape: "default", origin: combinedOrigin}, true, nil
	case o.LogFormatName != "":
		return nf, false, usage.About(usage.LogFormatName, fmt.Errorf("%s %q needs %s, the config file that defines it", usage.LogFormatName, o.LogFormatName, usage.NginxConf))
	}
	return nf, false, nil
}

// nginxFormatFlag reads --log-format. The value is the format as written
// between the quotes of a log_format directive: the nginx escapes \", \',
// \\, \t, \n and \r are read as nginx reads them. A value that starts with
// "log_format", "escape=" or a single quote is read as the arguments of the
// directive itself (log_format main escape=json '...' '...';), so that a
// directive can be pasted whole.
func nginxFormatFlag(s string) (nginxFormat, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "log_format") || strings.HasPrefix(t, "escape=") || strings.HasPrefix(t, "'") {
		ds, err := nginxconf.Read(usage.LogFormat.String(), []byte(t), nginxconf.Options{OpenEnd: true, KeepIncludes: true})
		if err != nil {
			return nginxFormat{}, nginxConfError(err)
		}
		if len(ds) != 1 || ds[0].IsBlock {
			return nginxFormat{}, usage.About(usage.LogFormat, fmt.Errorf("%s: want one log_format directive or format string, got %q", usage.LogFormat, s))
		}
		args := append([]string{ds[0].Name}, nginxWords(ds[0].Args)...)
		name := ""
		if len(args) > 0 && args[0] == "log_format" {
			if len(args) < 3 {
				return nginxFormat{}, usage.About(usage.LogFormat, fmt.Errorf("%s: a log_format directive needs a name and a format: %q", usage.LogFormat, s))
			}
			name, args = args[1], args[2:]
		}
		nf, err := logFormatArgs(args)
		if err != nil {
			return nginxFormat{}, usage.About(usage.LogFormat, fmt.Errorf("%s: %w", usage.LogFormat, err))
		}
		nf.origin = usage.LogFormat.String()
		if name != "" {
			nf.origin = fmt.Sprintf("%s (log_format %q)", usage.LogFormat, name)
		}
		if name == "combined" && nf.text == "" {
			nf.text = nginxCombined
		}
		return nf, nil
	}
	if t == "combined" {
		return nginxFormat{text: nginxCombined, escape: "default", origin: combinedOrigin}, nil
	}
	return nginxFormat{text: unescapeNginx(s), escape: "default", origin: usage.LogFormat.String()}, nil
}

// logFormatArgs reads the arguments of a log_format directive after its
// name: an optional escape=default|json|none, then the parts of the format,
// joined.
func logFormatArgs(args []string) (nginxFormat, error) {
	nf := nginxFormat{escape: "default"}
	if len(args) > 0 && strings.HasPrefix(args[0], "escape=") {
		nf.escape = strings.TrimPrefix(args[0], "escape=")
		if nf.escape != "default" && nf.escape != "json" && nf.escape != "none" {
			return nf, fmt.Errorf("unknown escape=%s: nginx knows default, json and none", nf.escape)
		}
		args = args[1:]
	}
	nf.text = strings.Join(args, "")
	return nf, nil
}

// unescapeNginx reads the escapes nginx's config parser reads in a string:
// \" \' \\ \t \r \n; any other backslash stays as it is.
func unescapeNginx(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '"', '\'', '\\':
				i++
			case 't':
				b = append(b, '\t')
				i++
				continue
			case 'r':
				b = append(b, '\r')
				i++
				continue
			case 'n':
				b = append(b, '\n')
				i++
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// NewNginx returns a decoder of nginx access-log lines read from r (named
// name in errors) written with the log format o gives (see
// nginxFormatOf). Without a format it recognises nginx's combined format
// followed by " $request_time" or " $request_time $upstream_response_time"
// from the first line, and otherwise fails saying what to pass. Samples are
// grouped by o.By (see Grouper).
func NewNginx(r io.Reader, name string, o Options) (Decoder, error) {
	nf, ok, err := nginxFormatOf(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if !ok {
		line, err := peekFirstLine(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch shapeBehindPrefixes(line, nginxShape) {
		case nginxCombinedTimedUpstream:
			nf = nginxFormat{text: nginxCombinedTimedUpstream, escape: "default", origin: "combined + $request_time $upstream_response_time (recognised from the first line)"}
		case nginxCombinedTimed:
			nf = nginxFormat{text: nginxCombinedTimed, escape: "default", origin: "combined + $request_time (recognised from the first line)"}
		case nginxCombined:
			return nil, fmt.Errorf("%s: the lines look like the combined format (nginx's or Apache's), which records no latency. "+
				"nginx: add $request_time to a log_format, e.g. log_format timed '%s $request_time $upstream_response_time'; "+
				"Apache: add %%D to the LogFormat and use %s apache", name, nginxCombined, usage.Input)
		default:
			return nil, fmt.Errorf("%s: nginx logs are written in a format of the user's choice: give it with %s '<format>' "+
				"or %s nginx.conf %s <name> (without them only combined followed by "+
				"$request_time [$upstream_response_time] is recognised, and the first line is not that)", name, usage.LogFormat, usage.NginxConf, usage.LogFormatName)
		}
	}
	return newNginxDecoder(br, name, nf, o)
}

func newNginxDecoder(r io.Reader, name string, nf nginxFormat, o Options) (Decoder, error) {
	p, err := compileNginx(nf, o.Latency)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return newLogDecoder(r, name, o, p)
}

// NewIngressNginx returns a decoder of ingress-nginx controller logs in its
// default upstreaminfo format, or in o.LogFormat when given (the
// controller's log-format-upstream setting).
func NewIngressNginx(r io.Reader, name string, o Options) (Decoder, error) {
	if o.LogFormat != "" || o.NginxConf != "" {
		return NewNginx(r, name, o)
	}
	return newNginxDecoder(r, name, nginxFormat{text: ingressUpstreamInfo, escape: "default", origin: "ingress-nginx's upstreaminfo format"}, o)
}

// peekFirstLine returns the first non-blank line of br (trimmed) without
// consuming it. It peeks no further than the end of that line, so that a
// slow stream (a pipe from tail -f) is not held up until 64 KiB arrive; a
// first line longer than br's buffer is returned cut.
func peekFirstLine(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; {
		peek, err := br.Peek(n)
		rest := peek
		for {
			line, after, found := bytes.Cut(rest, []byte("\n"))
			if !found {
				break
			}
			if line = bytes.TrimSpace(line); len(line) > 0 {
				return line, nil
			}
			rest = after
		}
		if err == io.EOF || err == bufio.ErrBufferFull {
			if line := bytes.TrimSpace(rest); len(line) > 0 {
				return line, nil
			}
			return nil, ErrEmptyInput
		}
		if err != nil {
			return nil, err
		}
		n = max(len(peek)+1, br.Buffered()) // more than the buffer holds: ErrBufferFull
	}
}

// builtinNginx compiles a built-in format for sniffing. A layout keeps
// caches, so each sniff compiles its own (a few microseconds, once per input).
func builtinNginx(format string) *logLayout {
	l, err := compileNginx(nginxFormat{text: format, escape: "default", origin: "built-in"}, "request")
	if err != nil {
		panic("ingest: built-in format does not compile: " + err.Error())
	}
	return l
}

// nginxShape returns which of combined, combined + $request_time and
// combined + $request_time $upstream_response_time a line is written in,
// or "". The request time must have a decimal point, as nginx writes it
// ("0.012"): a trailing integer is more likely Apache's %D (microseconds)
// or some other count.
func nginxShape(line []byte) string {
	if !looksCombined(line) {
		return ""
	}
	q := bytes.LastIndexByte(line, '"')
	tail := bytes.TrimSpace(line[q+1:])
	if len(tail) == 0 {
		// combined has no latency to compile for: check the line with a
		// request time added
		if layoutParses(builtinNginx(nginxCombinedTimed), append(line[:len(line):len(line)], " 0.000"...)) {
			return nginxCombined
		}
		return ""
	}
	rt, rest, _ := bytes.Cut(tail, []byte(" "))
	if bytes.IndexByte(rt, '.') < 0 {
		return ""
	}
	if len(rest) == 0 {
		if layoutParses(builtinNginx(nginxCombinedTimed), line) {
			return nginxCombinedTimed
		}
		return ""
	}
	if layoutParses(builtinNginx(nginxCombinedTimedUpstream), line) {
		return nginxCombinedTimedUpstream
	}
	return ""
}

// looksCombined checks the start of a combined line: an address without
// spaces, " - ", a user, " [".
func looksCombined(line []byte) bool {
	addr, rest, ok := bytes.Cut(line, []byte(" - "))
	if !ok || len(addr) == 0 || bytes.ContainsAny(addr, " \t\"[") {
		return false
	}
	return bytes.Contains(rest, []byte(" [")) || bytes.HasPrefix(rest, []byte("["))
}

// layoutParses reports whether l parses line without error.
func layoutParses(l *logLayout, line []byte) bool {
	var s Sample
	var f Fields
	return l.Parse(line, &s, &f) == nil
}

func sniffNginx(line []byte) bool { return nginxShape(line) != "" }

func sniffIngressNginx(line []byte) bool {
	return looksCombined(line) && layoutParses(builtinNginx(ingressUpstreamInfo), line)
}

func init() {
	Register(Format{
		Name:     "nginx",
		Priority: 50,
		Flags: []Flag{logFormatFlag,
			{Name: "nginx-conf", Usage: "read the log_format from this nginx config file (with {log-format-name})", Field: func(o *Options) *string { return &o.NginxConf }},
			{Name: "log-format-name", Usage: "name of the log_format in {nginx-conf}", Field: func(o *Options) *string { return &o.LogFormatName }}},
		Summary: "nginx access log in the log_format given by {log-format} or {nginx-conf}/{log-format-name} " +
			"(recognised without them: combined + $request_time [$upstream_response_time])",
		Sniff:     sniffNginx,
		Latencies: nginxLatencies(),
		New:       NewNginx,
	})
	Register(Format{
		Name:      "ingress-nginx",
		Priority:  40,
		Summary:   "ingress-nginx controller log in its default upstreaminfo format (or {log-format})",
		Sniff:     sniffIngressNginx,
		Latencies: nginxLatencies(),
		New:       NewIngressNginx,
	})
}
