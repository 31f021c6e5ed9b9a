package report

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payloads are group names anyone can send as a request path.
var payloads = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
	`</code></pre><svg onload=alert(1)>`,
	`*bold* | [link](javascript:alert(1)) ` + "`code`",
}

// hostile is a report whose every text from the input carries a payload.
func hostile() *Report {
	r := unknowns()
	r.Input.Files = []string{payloads[0]}
	r.Input.Notes = []string{payloads[1]}
	r.Input.BadExamples = []string{payloads[2]}
	base := r.Groups[0]
	r.Groups = nil
	for i, p := range payloads {
		g := base
		g.Name = p
		g.Excluded = map[string]int64{p: 1}
		g.Recommendation.Warnings = []string{p}
		g.Recommendation.Steps = []Step{{Rule: p, Seconds: 0.03, Reason: p}}
		g.LittlesLaw = LittlesLaw{Verdict: p, RatePerSecond: ptr(10.0), InFlightNormal: ptr(1.0), InFlightDuringHang: ptr(5.0),
			Pool: ptr(4), PoolExhausted: ptr(i%2 == 0), SecondsToExhaustion: ptr(0.4), RateSource: p}
		g.Policy = &Policy{RequestedAttempts: 3, Attempts: 3, PerTryTimeoutSeconds: 0.1, RetryOn: []string{"timeout", p}, Jitter: p,
			Layers: 1, Amplification: 3, Steps: []Step{{Rule: p, Reason: p}}, Warnings: []string{p},
			Simulation: &Simulation{Requests: 10, Scenarios: []Scenario{{Name: p, SuccessFraction: 0.5}}}}
		g.Distribution = &Distribution{LowestSeconds: 0.0178, Bins: []Bin{{UpperSeconds: 0.02, Count: 2}, {UpperSeconds: 0.0224, Count: 1}}}
		r.Groups = append(r.Groups, g)
	}
	r.Snippets = []Snippet{{Target: payloads[0], File: payloads[1], Notes: []string{payloads[2]}, Text: payloads[2] + "\n" + payloads[0]}}
	return r
}

// htmlTags are the only elements WriteHTML writes.
var htmlTags = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "main": true,
	"header": true, "footer": true, "section": true, "h1": true, "h2": true, "h3": true, "p": true,
	"ul": true, "ol": true, "li": true, "code": true, "pre": true, "strong": true, "a": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
	"figure": true, "figcaption": true, "svg": true, "rect": true, "line": true, "path": true,
	"circle": true, "text": true,
}

var tagRE = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>`)
var attrRE = regexp.MustCompile(`\s([a-zA-Z-]+)=`)
var quotedRE = regexp.MustCompile(`"[^"]*"`)

// TestHTMLEscapesInput feeds names like <script>alert(1)</script> and
// "><img src=x onerror=...> into every text of the report: they must come
// out as text, never as elements or attributes.
func TestHTMLEscapesInput(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, hostile()))
	out := b.String()

	assert.Equal(t, 0, strings.Count(strings.ToLower(out), "<script"), "the page has no script element at all")
	for _, m := range tagRE.FindAllStringSubmatch(out, -1) {
		assert.True(t, htmlTags[strings.ToLower(m[2])], "element <%s> is not one WriteHTML writes", m[2])
		for _, a := range attrRE.FindAllStringSubmatch(quotedRE.ReplaceAllString(m[3], `""`), -1) {
			assert.False(t, strings.HasPrefix(strings.ToLower(a[1]), "on"), "event handler attribute %q in <%s%s>", a[1], m[2], m[3])
		}
	}
	assert.Contains(t, out, "&lt;script&gt;alert(1)&lt;/script&gt;", "the payload is shown, escaped")
	assert.Contains(t, out, "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;")
	assert.Contains(t, out, "&lt;/code&gt;&lt;/pre&gt;&lt;svg onload=alert(1)&gt;")
	assert.NotContains(t, out, "javascript:alert(1)\"", "no payload in an attribute")
	for _, id := range regexp.MustCompile(`id="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		assert.Regexp(t, `^(summary|snippets|snippet-\d+|g\d+(-[a-z-]+)?)$`, id[1], "ids never hold input")
	}
	assert.Equal(t, 4, strings.Count(out, `class="group"`), "one section per group")
	assert.Contains(t, out, `<section id="summary">`)
	assert.Contains(t, out, `<section id="snippets">`)
}

// TestHTMLSelfContained: nothing in the page points anywhere else.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, hostile()))
	out := b.String()
	assert.Contains(t, out, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`)
	for _, attr := range regexp.MustCompile(`\s(src|href|xlink:href|action|data)="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		assert.True(t, strings.HasPrefix(attr[2], "#"), "%s=%q leaves the page", attr[1], attr[2])
	}
	assert.NotContains(t, out, "@import")
	assert.NotContains(t, out, "url(")
}

// TestBucketsAndSource: a report read from Prometheus shows its source and
// each group's bucket view, as the text report does, in HTML and Markdown.
func TestBucketsAndSource(t *testing.T) {
	r := unknowns()
	r.Prometheus = &PrometheusSource{URL: "http://prom:9090", Metric: "rpc_seconds", Kind: "classic", UnitSeconds: 1,
		UnitFrom: "the name's suffix _seconds", At: "2026-11-02T12:00:00Z", WindowSeconds: 3600}
	r.Groups[0].Buckets = &Buckets{Kind: "classic", Quantile: 0.999, Bucket: NewBucketRange(0.5, 1),
		EstimateSeconds: Finite(0.918), EstimateBy: "histogram_quantile", HistogramQuantileSeconds: Finite(0.918),
		SuggestedLE: "0.95", BoundsSeconds: []float64{0.5, 1}}
	var h, m bytes.Buffer
	require.NoError(t, WriteHTML(&h, r))
	require.NoError(t, WriteMarkdown(&m, r))
	for name, c := range map[string]struct {
		out string
		esc func(string) string
	}{"html": {h.String(), template.HTMLEscapeString}, "markdown": {m.String(), md}} {
		assert.Contains(t, c.out, "Prometheus at http://prom:9090: classic histogram", name)
		assert.Contains(t, c.out, c.esc("p99.9 lies in the bucket (500ms, 1s]"), name)
		assert.Contains(t, c.out, c.esc("Prometheus's histogram_quantile (a linear estimate within the bucket): 918ms."), name)
	}
	assert.Contains(t, h.String(), "<h3>Buckets (classic histogram: every call counts at its bucket&#39;s upper bound)</h3>\n<ul class=\"notes buckets\">\n<li>p99.9 lies in the bucket")
	assert.Contains(t, m.String(), "### Buckets (classic histogram: every call counts at its bucket's upper bound)\n\n- p99.9 lies in the bucket (500ms, 1s\\]")
	var plain bytes.Buffer
	require.NoError(t, WriteHTML(&plain, unknowns()))
	assert.NotContains(t, plain.String(), "Buckets", "calls read one by one have no bucket view")
}
