package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
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

// The spool is read under the source's name from the start: a value of
// the traces that reads like the spool's path stays as the traces say it
// (a replacement of the path in the report's text rewrote it into the
// source's name), and the path itself reaches no part of the report.
func TestRunJaegerKeepsAValueLikeTheSpoolPath(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var spool string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/services" {
			fmt.Fprint(w, `{"data":["checkout","frontend"],"total":2,"limit":0,"offset":0,"errors":null}`)
			return
		}
		// The spool being written is the one file in the directory.
		dirs, _ := filepath.Glob(filepath.Join(tmp, "*"))
		require.Len(t, dirs, 1)
		spool = filepath.Join(dirs[0], "traces.json")
		// A failed call to a route that begins with the spool's path.
		trs := jaegertest.Traces(2, t0.Add(time.Second), time.Second)
		tr := trs[1].JSON()
		failed := strings.ReplaceAll(tr, `"tags":[{"key":"span.kind","type":"string","value":"client"}`,
			`"tags":[{"key":"error","type":"bool","value":true},{"key":"http.route","type":"string","value":`+strconv.Quote(spool+"/x")+`},{"key":"span.kind","type":"string","value":"client"}`)
		require.NotEqual(t, tr, failed)
		fmt.Fprintf(w, `{"data":[%s,%s],"total":2,"limit":0,"offset":0,"errors":null}`, failed, trs[0].JSON())
	}))
	defer srv.Close()
	j := JaegerOptions{Source: jaegersource.Options{
		Connection: httpclient.Options{URL: srv.URL},
		Service:    "checkout",
		Start:      t0, End: t0.Add(time.Hour),
		Limit: 40,
	}}
	o := options()
	o.Ingest.By = []string{"route"}
	got, err := RunJaeger(context.Background(), o, j)
	require.NoError(t, err)
	require.NotEmpty(t, spool)
	name := "service checkout at " + srv.URL
	assert.Equal(t, []string{name}, got.Input.Files)
	// The failed route's group is named as the traces name it.
	i := slices.IndexFunc(got.Input.Findings, func(f finding.Finding) bool { return f.Code == finding.GroupEmpty })
	require.GreaterOrEqual(t, i, 0, "the group of the failed call is left out")
	empty := got.Input.Findings[i]
	assert.Equal(t, spool+"/x", empty.Fields["group"])
	assert.Equal(t, fmt.Sprintf("Group %q has no call usable for latency (1 error); it is left out.", spool+"/x"), empty.Message)
	assert.Equal(t, got.Input.Notes, finding.Messages(got.Input.Findings))
}
