package ingest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// TestSniffOrder pins the order auto-detection tries the formats in (see
// Format.Priority for why each comes where it does): a new format must
// say where it goes, not land where its name sorts.
func TestSniffOrder(t *testing.T) {
	var got []string
	for _, f := range sniffOrder() {
		if f.Sniff != nil {
			got = append(got, f.Name)
		}
	}
	assert.Equal(t, []string{"hlog", "alb", "envoy", "haproxy", "apache", "ingress-nginx", "nginx", "jaeger", "otlp", "otlp-metrics", "zipkin", "caddy", "envoy-json", "traefik", "buckets", "csv"}, got)
}

// TestCheckLatency pins each format's --latency measures and the rule
// that reads them.
func TestCheckLatency(t *testing.T) {
	got := map[string][]string{}
	for _, f := range Formats() {
		got[f.Name] = f.Latencies
	}
	upstream := []string{"request", "upstream", "upstream-header"}
	both := []string{"request", "upstream"}
	nginx := []string{"request", "upstream", "upstream-last", "upstream-header"}
	assert.Equal(t, map[string][]string{
		"alb": upstream, "apache": {"request"}, "buckets": nil, "caddy": both, "csv": nil, "envoy": both, "envoy-json": both,
		"haproxy": upstream, "hlog": nil, "ingress-nginx": nginx, "jaeger": nil, "jsonl": both, "nginx": nginx, "otlp": nil, "otlp-metrics": nil, "traefik": both, "zipkin": nil,
	}, got)
	assert.Equal(t, nginx, LatencyNames(), "auto: the union, request first")

	for _, tc := range []struct {
		format, latency, want string
	}{
		{"nginx", "", ""},
		{"nginx", "upstream-last", ""},
		{"auto", "upstream-last", ""},
		{"", "upstream-header", ""},
		{"csv", "", ""},
		{"nginx", "upstreem", `unknown latency measure "upstreem" for nginx logs: want request, upstream, upstream-last, upstream-header`},
		{"envoy", "upstream-last", `unknown latency measure "upstream-last" for envoy logs: want request, upstream`},
		{"auto", "upstreem", `unknown latency measure "upstreem": want request, upstream, upstream-last, upstream-header`},
		{"auto", "Request", `unknown latency measure "Request": want request, upstream, upstream-last, upstream-header`},
		{"csv", "upstream", `csv inputs have one latency, no measure to choose: "upstream" is for access logs`},
		{"ngnix", "request", `unknown input format "ngnix"`},
	} {
		err := CheckLatency(tc.format, tc.latency)
		if tc.want == "" {
			assert.NoError(t, err, "%s %s", tc.format, tc.latency)
			continue
		}
		assert.ErrorContains(t, err, tc.want, "%s %s", tc.format, tc.latency)
	}
}

// TestDecodersCheckLatency: every decoder of a format with measures
// refuses one it does not read with CheckLatency's error, and accepts
// each of its own, before it reads a line.
func TestDecodersCheckLatency(t *testing.T) {
	opts := Options{LogFormat: "$request_time $upstream_response_time $upstream_header_time", Field: "d", Unit: 1}
	for _, f := range Formats() {
		if f.New == nil || len(f.Latencies) == 0 {
			continue
		}
		o := opts
		if f.Name == "apache" {
			o.LogFormat = "%D"
		}
		for _, l := range append([]string{"bogus"}, LatencyNames()...) {
			o.Latency = l
			_, err := f.New(bytes.NewReader(nil), "x.log", o)
			want := CheckLatency(f.Name, l)
			if want == nil {
				if err != nil {
					assert.NotContains(t, err.Error(), "latency measure", "%s --latency %s", f.Name, l)
				}
				continue
			}
			// ingress-nginx's is nginx's rule, and names nginx.
			assert.ErrorContains(t, err, strings.Replace(want.Error(), "ingress-nginx", "nginx", 1), "%s --latency %s", f.Name, l)
		}
	}
}

// TestCSVSaysLatencyDoesNotApply: found by auto, a CSV input takes no
// --latency measure, and says so rather than ignoring it silently.
func TestCSVSaysLatencyDoesNotApply(t *testing.T) {
	d, err := NewDecoder("auto", strings.NewReader("latency_ms\n5\n"), "a.csv", Options{Latency: "upstream"})
	if !assert.NoError(t, err) {
		return
	}
	n, ok := d.(Noter)
	if assert.True(t, ok) {
		assert.Equal(t, []string{"--latency upstream does not apply to CSV: its latency column is read as it is"}, n.Notes())
	}
	d, err = NewDecoder("auto", strings.NewReader("latency_ms\n5\n"), "a.csv", Options{})
	if assert.NoError(t, err) {
		assert.Empty(t, d.(Noter).Notes())
	}
}

// TestFormatFlags: the formats declare their own options; each lands in
// its field of Options, and a shared one (--log-format) is offered once.
func TestFormatFlags(t *testing.T) {
	var names []string
	var o Options
	for i, f := range FormatFlags() {
		names = append(names, f.Name)
		*f.Field(&o) = fmt.Sprint(i)
	}
	assert.Equal(t, []string{"column", "field", "log-format", "log-format-name", "method-field", "metric", "nginx-conf",
		"path-field", "span-kind", "status-column", "status-field", "time-column", "time-field"}, names)
	assert.Equal(t, Options{LogFormat: "2", LogFormatName: "3", NginxConf: "6", Field: "1", TimeField: "12",
		StatusField: "10", PathField: "7", MethodField: "4", Metric: "5", SpanKind: "8",
		CSV: CSVOptions{Column: "0", TimeColumn: "11", StatusColumn: "9"}}, o,
		"every flag in a field of its own")
}

// TestFormatHelpNamesOptions: a format's summary and its flags' usage
// name options by key, each one of usage's (the CLI expands them).
func TestFormatHelpNamesOptions(t *testing.T) {
	var named []usage.Option
	texts := []string{}
	for _, f := range Formats() {
		texts = append(texts, f.Summary)
	}
	for _, f := range FormatFlags() {
		texts = append(texts, f.Usage)
	}
	for _, s := range texts {
		for _, o := range usage.Named(s) {
			named = append(named, o)
			assert.Contains(t, usage.Options(), o, "%q names %q, not an option", s, o)
		}
	}
	assert.Len(t, named, 22)
	nginx := slices.IndexFunc(Formats(), func(f Format) bool { return f.Name == "nginx" })
	require.GreaterOrEqual(t, nginx, 0)
	assert.Equal(t, "nginx access log in the log_format given by --log-format or --nginx-conf/--log-format-name (recognised without them: combined + $request_time [$upstream_response_time])",
		usage.Expand(Formats()[nginx].Summary))
}
