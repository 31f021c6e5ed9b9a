package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Apache httpd access logs.
//
// Like nginx, Apache writes what its LogFormat says, so the decoder
// compiles the format (--log-format) into the layout engine of
// nginx_layout.go. Without a format it recognises from the first line the
// two formats Apache predefines in its default config, common and combined,
// each followed by " %D" (the duration in microseconds), the usual way to
// add timing to them.

// Apache's predefined formats (httpd.conf) and the two the decoder
// recognises without --log-format.
const (
	apacheCommon    = `%h %l %u %t "%r" %>s %b`
	apacheCombined  = `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i"`
	apacheCommonD   = apacheCommon + ` %D`
	apacheCombinedD = apacheCombined + ` %D`
)

// clfTimeFormat is the strftime format of %t, the one %{...}t format read
// besides sec, msec and usec.
const clfTimeFormat = "%d/%b/%Y:%H:%M:%S %z"

// parseApacheFormat splits an Apache LogFormat string into its leading
// literal and its directives, each with the literal after it. A directive
// is % then modifiers (<, >, a status condition like !200,304), an optional
// {argument}, and a letter (or ^ti / ^to); %% is a literal %. %t becomes
// the literal "[", the time, the literal "]", as Apache writes it. The key
// of each item is the letter, with its argument after a colon
// ("T:ms", "i:referer"; header names lower-cased) and ">" or "<" before
// the letter for s.
func parseApacheFormat(format string) (prefix []byte, vars []logItem, err error) {
	lit := []byte{}
	addVar := func(it logItem) {
		if len(vars) == 0 {
			prefix = lit
		} else {
			vars[len(vars)-1].lit = lit
		}
		lit = []byte{}
		vars = append(vars, it)
	}
	for i := 0; i < len(format); {
		c := format[i]
		if c == '\\' && i+1 < len(format) {
			switch format[i+1] {
			case 'n':
				lit = append(lit, '\n')
			case 't':
				lit = append(lit, '\t')
			case 'r':
				lit = append(lit, '\r')
			case '"', '\\':
				lit = append(lit, format[i+1])
			default:
				lit = append(lit, c, format[i+1])
			}
			i += 2
			continue
		}
		if c != '%' {
			lit = append(lit, c)
			i++
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			lit = append(lit, '%')
			i += 2
			continue
		}
		d, next, err := readApacheDirective(format, i)
		if err != nil {
			return nil, nil, err
		}
		i = next
		if d.letter == "t" && !d.hasArg {
			lit = append(lit, '[')
			addVar(logItem{name: d.name, key: "t"})
			lit = append(lit, ']')
			continue
		}
		addVar(logItem{name: d.name, key: d.key()})
	}
	if len(vars) == 0 {
		return lit, nil, nil
	}
	vars[len(vars)-1].lit = lit
	return prefix, vars, nil
}

// apacheDirective is a LogFormat directive: as written (name, "%>s",
// "%{User-Agent}i"), its letter, its < or > modifier and its {argument}.
type apacheDirective struct {
	name, letter, arg string
	mod               byte
	hasArg            bool
}

// readApacheDirective reads the directive at format[start], a '%' not
// followed by another; next is where the format goes on after it.
func readApacheDirective(format string, start int) (d apacheDirective, next int, err error) {
	i := start + 1
	for i < len(format) {
		switch c := format[i]; {
		case c == '<' || c == '>':
			d.mod = c
			i++
			continue
		case c == '!' || c == ',' || c >= '0' && c <= '9':
			i++ // a status condition: the value is "-" when it does not hold
			continue
		case c == '{':
			end := strings.IndexByte(format[i+1:], '}')
			if end < 0 {
				return d, 0, fmt.Errorf("the { of %s is not closed", format[start:])
			}
			d.arg, d.hasArg = format[i+1:i+1+end], true
			i += end + 2
			continue
		}
		break
	}
	if i >= len(format) {
		return d, 0, fmt.Errorf("%q at the end of the format lacks its directive letter", format[start:])
	}
	d.letter = string(format[i])
	switch {
	case format[i] == '^' && i+2 < len(format):
		d.letter = format[i : i+3]
	case !isASCIILetter(format[i]):
		return d, 0, fmt.Errorf("%q is not a LogFormat directive", format[start:i+1])
	}
	i += len(d.letter)
	d.name = format[start:i]
	return d, i, nil
}

// key is the field the directive's value goes to: its letter, with its
// modifier (>s), header name (i:user-agent), time format or argument.
// %t without a format is "t", its brackets part of the literal text.
func (d apacheDirective) key() string {
	key := d.letter
	switch d.letter {
	case "s":
		if d.mod != 0 {
			key = string(d.mod) + "s"
		}
	case "i", "o":
		key += ":" + strings.ToLower(d.arg)
	case "t":
		if d.hasArg {
			key = apacheTimeKey(d.arg)
		}
	default:
		if d.hasArg {
			key += ":" + d.arg
		}
	}
	return key
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// apacheTimeKey reads the argument of %{...}t: sec, msec, usec (with an
// optional begin: or end: prefix), msec_frac and usec_frac (fractions of
// a second), or a strftime format: that of %t ("t:clf"), %s (Unix
// seconds), or any other ("t:strftime:" and the format), which the layout
// skips and apacheClock reads back where it can (apache_time.go). No
// format is refused: latency does not need the time.
func apacheTimeKey(arg string) string {
	a := strings.TrimPrefix(strings.TrimPrefix(arg, "begin:"), "end:")
	switch a {
	case "sec", "msec", "usec":
		return "t:" + a
	case "msec_frac", "usec_frac":
		return "t:frac"
	}
	switch apacheExpand(a) {
	case apacheExpand(clfTimeFormat):
		return "t:clf"
	case "%s":
		return "t:sec"
	}
	return "t:strftime:" + a
}

// apacheDurations are the directives that hold the request's duration, most
// precise first.
var apacheDurations = []struct {
	key  string
	unit time.Duration
}{
	{"D", time.Microsecond},
	{"T:us", time.Microsecond},
	{"T:ms", time.Millisecond},
	{"T", time.Second},
	{"T:s", time.Second},
}

// compileApache compiles an Apache LogFormat into a LineParser. latency must
// be "" or "request": Apache records only the whole request's duration.
//
// The values used: the duration from %D, %{us}T, %{ms}T or %T (the first
// found in that order; %T is whole seconds), the status from %>s, %s or
// %<s, the time from %{usec}t, %{msec}t, %{sec}t or %t (or strftime
// directives of any shape, read by NewApache: apache_time.go), the method from %m
// or %r, the request target from %r or %U, the host from %{Host}i, %V or
// %v, the upstream from %{BALANCER_WORKER_NAME}e (mod_proxy_balancer).
func compileApache(format, origin, latency string) (*logLayout, error) {
	l, _, err := compileApacheItems(format, origin, latency)
	return l, err
}

// compileApacheItems is compileApache, which returns the format's items
// too.
func compileApacheItems(format, origin, latency string) (*logLayout, []logItem, error) {
	if err := CheckLatency("apache", latency); err != nil {
		return nil, nil, fmt.Errorf("%w (Apache's access log records only the whole request's duration, %%D or %%T)", err)
	}
	prefix, vars, err := parseApacheFormat(format)
	if err != nil {
		return nil, nil, fmt.Errorf("%s (%q): %w", origin, format, err)
	}
	has := func(key string) int {
		return slices.IndexFunc(vars, func(v logItem) bool { return v.key == key })
	}
	first := func(keys ...string) int {
		for _, k := range keys {
			if i := has(k); i >= 0 {
				return i
			}
		}
		return -1
	}
	fields := make([]logField, len(vars))
	for i, v := range vars {
		fields[i] = logField{name: v.name}
		if v.key == "t" || v.key == "t:clf" {
			fields[i].width = len("10/Oct/2000:13:55:36 -0700")
		}
		if spec, ok := strings.CutPrefix(v.key, "t:strftime:"); ok {
			// a value of fixed width may hold the text that follows it
			fields[i].width, _ = apacheStrftimeWidth(apacheExpand(spec))
		}
	}

	lat := -1
	var unit time.Duration
	for _, d := range apacheDurations {
		if i := has(d.key); i >= 0 {
			lat, unit = i, d.unit
			break
		}
	}
	if lat < 0 {
		what := "it has no duration"
		if len(vars) == 0 && strings.Contains(format, "$") {
			return nil, nil, fmt.Errorf("%s (%q) has no Apache directive (%%x); it looks like an nginx log_format: use %s nginx", origin, format, usage.Input)
		}
		if format == apacheCommon || format == apacheCombined {
			what = "Apache's common and combined formats record no duration"
		}
		return nil, nil, fmt.Errorf("%s (%q): %s. Add %%D (microseconds) to the LogFormat, e.g.\n  LogFormat \"%s %%D\" timed\n  CustomLog logs/access_log timed",
			origin, format, what, strings.ReplaceAll(apacheCombined, `"`, `\"`))
	}
	claim(fields, lat, roleLatency).unit = unit
	claim(fields, first(">s", "s", "<s"), roleStatus)
	switch i := first("t:usec", "t:msec", "t:sec", "t", "t:clf"); {
	case i < 0:
	case vars[i].key == "t" || vars[i].key == "t:clf":
		claim(fields, i, roleTimeCLF)
	default:
		f := claim(fields, i, roleTimeUnix)
		f.unit = map[string]time.Duration{"t:usec": time.Microsecond, "t:msec": time.Millisecond, "t:sec": time.Second}[vars[i].key]
	}
	if i := has("m"); i >= 0 {
		claim(fields, i, roleMethod)
	} else if r := claim(fields, has("r"), roleRequest); r != nil {
		r.method = true
	}
	if i := has("r"); i >= 0 {
		claim(fields, i, roleRequest).path = true
	} else {
		claim(fields, has("U"), rolePath)
	}
	claim(fields, first("i:host", "V", "v"), roleHost)
	claim(fields, has("e:BALANCER_WORKER_NAME"), roleUpstreamName)

	l, err := newLogLayout(prefix, vars, fields)
	if err != nil {
		return nil, nil, fmt.Errorf("%s (%q): %w", origin, format, err)
	}
	l.backslash = true // Apache escapes " and \ in values as \" and \\
	return l, vars, nil
}

// apacheFormatFlag reads --log-format for Apache: the format string as it
// stands between the quotes of a LogFormat directive (\" read as "), the
// nicknames common and combined, or a whole LogFormat directive.
func apacheFormatFlag(s string) string {
	t := strings.TrimSpace(s)
	if len(t) > len("LogFormat ") && strings.EqualFold(t[:len("LogFormat ")], "LogFormat ") {
		rest := strings.TrimSpace(t[len("LogFormat "):])
		if strings.HasPrefix(rest, `"`) {
			// the quoted format, up to its closing unescaped quote
			for i := 1; i < len(rest); i++ {
				if rest[i] == '\\' {
					i++
					continue
				}
				if rest[i] == '"' {
					return rest[1:i]
				}
			}
		}
		if f, _, ok := strings.Cut(rest, " "); ok {
			return f
		}
		return rest
	}
	switch t {
	case "common":
		return apacheCommon
	case "combined":
		return apacheCombined
	}
	return s
}

// NewApache returns a decoder of Apache httpd access-log lines read from r
// (named name in errors) written with the LogFormat o.LogFormat. Times in
// strftime formats of the user's own are read back where they can be
// (apache_time.go); where they cannot, the decoder's Notes say so. Without
// one it recognises from the first line Apache's common or combined format
// followed by " %D", and otherwise fails saying what to pass. Samples are
// grouped by o.By (see Grouper).
func NewApache(r io.Reader, name string, o Options) (Decoder, error) {
	if o.NginxConf != "" {
		return nil, usage.About(usage.NginxConf, fmt.Errorf("%s: %s is for nginx logs; give Apache's LogFormat with %s", name, usage.NginxConf, usage.LogFormat))
	}
	br := bufio.NewReaderSize(r, 64<<10)
	format, origin := apacheFormatFlag(o.LogFormat), usage.LogFormat.String()
	if o.LogFormat == "" {
		line, err := peekFirstLine(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch format = shapeBehindPrefixes(line, apacheShape); format {
		case apacheCombinedD:
			origin = "combined + %D (recognised from the first line)"
		case apacheCommonD:
			origin = "common + %D (recognised from the first line)"
		default:
			return nil, fmt.Errorf("%s: give the LogFormat the log was written with: %s '<format>' "+
				"(without it only common or combined followed by %%D is recognised, and the first line is not that)", name, usage.LogFormat)
		}
	}
	l, vars, err := compileApacheItems(format, origin, o.Latency)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var p LineParser = l
	var notes []string
	if !layoutReadsTime(l) {
		switch clock, note := newApacheClock(l, vars); {
		case clock != nil:
			p = &apacheParser{logLayout: l, clock: clock}
		case note != "":
			notes = append(notes, note)
		}
	}
	return newLogDecoder(br, name, o, p, notes...)
}

// layoutReadsTime reports whether l reads a time itself.
func layoutReadsTime(l *logLayout) bool {
	return slices.ContainsFunc(l.fields, func(f logField) bool {
		return f.role == roleTimeCLF || f.role == roleTimeISO || f.role == roleTimeUnix
	})
}

// apacheShape returns which of combined + %D and common + %D a line is
// written in, or "". The duration must be an integer without a decimal
// point: nginx's $request_time has one, so lines ending in "0.012" go to
// the nginx decoder.
func apacheShape(line []byte) string {
	if !looksCombined(line) {
		return ""
	}
	i := bytes.LastIndexByte(line, ' ')
	if i < 0 {
		return ""
	}
	if _, ok := allDigits(line[i+1:]); !ok {
		return ""
	}
	for _, format := range []string{apacheCombinedD, apacheCommonD} {
		l, err := compileApache(format, "built-in", "")
		if err != nil {
			panic("ingest: built-in format does not compile: " + err.Error())
		}
		if layoutParses(l, line) {
			return format
		}
	}
	return ""
}

func sniffApache(line []byte) bool { return apacheShape(line) != "" }

func init() {
	Register(Format{
		Name:      "apache",
		Priority:  30,
		Flags:     []Flag{logFormatFlag},
		Summary:   "Apache httpd access log in the LogFormat given by {log-format} (recognised without it: common or combined + %D)",
		Sniff:     sniffApache,
		Latencies: []string{"request"},
		New:       NewApache,
	})
}
