package analysis

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/jaegersource/jaegertest"
)

// RunJaeger against a fake Jaeger (jaegertest: no Jaeger binary is
// available to the tests) reports what Run reports of the same traces in a
// file, paged in many searches, and names the service and URL as its input.
func TestRunJaegerAgreesWithTheFile(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	traces := jaegertest.Traces(300, t0.Add(time.Second), 11*time.Second)
	srv := httptest.NewServer(&jaegertest.Server{Traces: traces, Services: []string{"checkout", "frontend"}})
	defer srv.Close()

	var doc []string
	for _, tr := range traces {
		doc = append(doc, tr.JSON())
	}
	file := writeFile(t, "traces.json", `{"data":[`+strings.Join(doc, ",\n")+`]}`)
	fo := options(file)
	fo.Format = "jaeger"
	want, err := Run(context.Background(), fo, nil)
	require.NoError(t, err)

	j := JaegerOptions{Source: jaegersource.Options{
		Connection: httpclient.Options{URL: srv.URL},
		Service:    "checkout",
		Start:      t0, End: t0.Add(time.Hour),
		Limit: 40,
	}}
	// The spool goes to the temporary directory: one of this test's own,
	// so that what other processes leave in /tmp does not count.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	got, err := RunJaeger(context.Background(), options(), j)
	require.NoError(t, err)

	require.NotEmpty(t, want.Groups)
	require.Len(t, got.Groups, len(want.Groups))
	for i, g := range want.Groups {
		assert.Equal(t, g.Name, got.Groups[i].Name)
		assert.Equal(t, g.Samples, got.Groups[i].Samples)
		assert.Equal(t, g.Percentiles, got.Groups[i].Percentiles, g.Name)
		assert.Equal(t, g.Recommendation.TimeoutSeconds, got.Groups[i].Recommendation.TimeoutSeconds, g.Name)
	}
	// The edge the traces hold: frontend calls checkout, 300 times.
	require.Len(t, got.Groups, 1)
	assert.Contains(t, got.Groups[0].Name, "frontend")
	assert.Contains(t, got.Groups[0].Name, "checkout")
	assert.Equal(t, int64(300), got.Groups[0].Samples)
	assert.Equal(t, []string{"service checkout at " + srv.URL}, got.Input.Files)
	assert.Equal(t, want.Input.Records, got.Input.Records)
	assert.Contains(t, strings.Join(got.Input.Notes, "\n"), "300 traces of checkout read from Jaeger")
	// Every note is a finding's message (so that a note can be found by
	// its code): what was read is TT-JAEGER-READ, with its numbers.
	assert.Equal(t, got.Input.Notes, finding.Messages(got.Input.Findings))
	i := slices.IndexFunc(got.Input.Findings, func(f finding.Finding) bool { return f.Code == finding.JaegerRead })
	require.GreaterOrEqual(t, i, 0, "a finding says what was read")
	read := got.Input.Findings[i]
	assert.Equal(t, finding.Fields{"traces": int64(300), "service": "checkout", "from": "2026-11-30T12:00:00Z",
		"to": "2026-11-30T13:00:00Z", "searches": read.Fields["searches"]}, read.Fields)
	assert.Greater(t, read.Fields["searches"], int64(1), "paged in many searches")
	assert.Equal(t, want.CallGraph != nil, got.CallGraph != nil, "the call graph checks ran on the spool too")

	// The spool is removed.
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	assert.Empty(t, left)
}
