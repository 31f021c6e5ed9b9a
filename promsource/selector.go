package promsource

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Matcher is one label matcher of a selector: Name Op "Value".
type Matcher struct {
	Name  string
	Op    string // =, !=, =~ or !~
	Value string // unquoted
}

// String writes m as PromQL reads it, its value quoted with Go's rules,
// which PromQL's strings follow (promql/parser/lex.go: the escapes of Go's
// interpreted string literals).
func (m Matcher) String() string { return m.Name + m.Op + strconv.Quote(m.Value) }

// Matchers writes ms as the body of a selector, without its braces:
// `job="api", code!~"5.."`.
func Matchers(ms []Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, ", ")
}

// ParseSelector reads a --selector: label matchers in braces, as PromQL
// writes them (prometheus.io/docs/prometheus/latest/querying/basics/,
// "Time series selectors"): {name op value, ...}, the op one of = != =~
// !~, the value a string in double quotes, single quotes or backquotes, a
// trailing comma allowed, and a regular expression one that compiles (as
// Prometheus anchors it, ^(?s:value)$). Names are the classic
// [a-zA-Z_][a-zA-Z0-9_]*: the quoted names of Prometheus 3
// ({"http.route"="x"}) are not written into queries and rules by
// tunetimeout. "" and "{}" are no matchers. What does not parse is
// refused before it is sent or written: it would end the selector and
// smuggle PromQL into the queries and rule files.
func ParseSelector(s string) ([]Matcher, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil
	}
	bad := func(format string, a ...any) error {
		return usage.About(usage.Selector, fmt.Errorf("%s %q: %s", usage.Selector, s, fmt.Sprintf(format, a...)))
	}
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return nil, bad(`must be label matchers in braces, e.g. {job="api"}`)
	}
	rest := strings.TrimSpace(t[1 : len(t)-1])
	var out []Matcher
	for rest != "" {
		end := 0
		for end < len(rest) && (rest[end] == '_' || rest[end] >= 'a' && rest[end] <= 'z' || rest[end] >= 'A' && rest[end] <= 'Z' || end > 0 && rest[end] >= '0' && rest[end] <= '9') {
			end++
		}
		if end == 0 {
			return nil, bad("expected a label name at %q", clip(rest))
		}
		m := Matcher{Name: rest[:end]}
		rest = strings.TrimSpace(rest[end:])
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(rest, op) {
				m.Op = op
				break
			}
		}
		if m.Op == "" {
			return nil, bad("expected =, !=, =~ or !~ after %s", m.Name)
		}
		rest = strings.TrimSpace(rest[len(m.Op):])
		v, n, err := promString(rest)
		if err != nil {
			return nil, bad("the value of %s: %v", m.Name, err)
		}
		m.Value = v
		if m.Op == "=~" || m.Op == "!~" {
			if _, err := regexp.Compile("^(?s:" + v + ")$"); err != nil {
				return nil, bad("the value of %s is not a regular expression: %v", m.Name, err)
			}
		}
		out = append(out, m)
		rest = strings.TrimSpace(rest[n:])
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, bad("expected , or } after the matcher of %s at %q", m.Name, clip(rest))
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return out, nil
}

// promString reads the PromQL string at the start of s: its value and the
// bytes it took.
func promString(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("no quoted string")
	}
	q := s[0]
	switch q {
	case '`':
		end := strings.IndexByte(s[1:], '`')
		if end < 0 {
			return "", 0, errors.New("the backquote does not close")
		}
		v := s[1 : 1+end]
		if !utf8.ValidString(v) {
			return "", 0, errors.New("it is not UTF-8")
		}
		return v, end + 2, nil
	case '"', '\'':
		var b strings.Builder
		rest := s[1:]
		for {
			if rest == "" {
				return "", 0, errors.New("the quote does not close")
			}
			if rest[0] == q {
				return b.String(), len(s) - len(rest) + 1, nil
			}
			if rest[0] == '\n' {
				return "", 0, errors.New("a line break in a quoted string")
			}
			r, multibyte, tail, err := strconv.UnquoteChar(rest, q)
			if err != nil {
				return "", 0, errors.New("a bad escape in the quoted string")
			}
			if r < utf8.RuneSelf || !multibyte {
				b.WriteByte(byte(r))
			} else {
				b.WriteRune(r)
			}
			rest = tail
		}
	}
	return "", 0, fmt.Errorf("expected a quoted string at %q", clip(s))
}

// clip is the start of s, for an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// CheckMetric says whether name is a metric name tunetimeout can write into
// PromQL: a classic one, [a-zA-Z_:][a-zA-Z0-9_:]*; flag names it ("--metric").
func CheckMetric(flag, name string) error {
	if !metricName.MatchString(name) {
		return fmt.Errorf("%s %q is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", flag, name)
	}
	return nil
}

// CheckBy says whether l can group a histogram's series: a classic label
// name, [a-zA-Z_][a-zA-Z0-9_]*, and not one of the histogram's own labels.
func CheckBy(l string) error {
	switch {
	case !labelName.MatchString(l):
		return usage.About(usage.By, fmt.Errorf("%s %q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)", usage.By, l))
	case l == "le" || l == "vmrange" || l == "quantile" || l == "__name__":
		return usage.About(usage.By, fmt.Errorf("%s %s: cannot group by the histogram's own label", usage.By, l))
	}
	return nil
}
