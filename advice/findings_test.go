package advice

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// findingsReport is a report with findings in the input and in a group,
// built as the analysis builds one.
func findingsReport(t *testing.T) *report.Report {
	h := histogram.New()
	for i := range 2000 {
		h.Record(time.Duration(i+1) * time.Millisecond / 2)
	}
	rec, err := recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	require.NotEmpty(t, rec.Findings, "2,000 calls leave 2 above p99.9")
	pol, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Hedge: true})
	require.NoError(t, err)
	require.NotEmpty(t, pol.Findings, "a call that is not idempotent is not hedged")
	g := NewGroup(Result{Group: &histogram.Group{Name: "all", Latency: h}, Recommendation: rec, Policy: pol, RateSource: "unknown"})
	r := &report.Report{Input: report.Input{Files: []string{"a.csv"}, BadExamples: []string{}}, Groups: []report.Group{g}}
	r.Input.Note(finding.New(finding.RateShared, finding.Fields{"rate_per_second": 400.0, "groups": 2, "nan": math.NaN()}, "The --rate is shared."))
	return r
}

// TestJSONFindings: each group's findings are the recommendation's then
// the policy's, their messages are the warnings, and the input's are its
// notes; in JSON each is one object with its numbers beside code, severity
// and message, NaN written as null.
func TestJSONFindings(t *testing.T) {
	r := findingsReport(t)
	g := r.Groups[0]
	var codes []finding.Code
	for _, f := range g.Findings {
		codes = append(codes, f.Code)
	}
	assert.Equal(t, []finding.Code{finding.FewAbove, finding.PerTryNearMedian, finding.HedgeNotIdempotent}, codes)
	assert.Equal(t, finding.Messages(g.Findings[:1]), g.Recommendation.Warnings)
	assert.Equal(t, finding.Messages(g.Findings[1:]), g.Policy.Warnings)
	assert.Equal(t, []string{"The --rate is shared."}, r.Input.Notes)

	var b bytes.Buffer
	require.NoError(t, report.WriteJSON(&b, r))
	var doc struct {
		Input struct {
			Findings []map[string]any `json:"findings"`
		} `json:"input"`
		Groups []struct {
			Findings []map[string]any `json:"findings"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, []map[string]any{{"code": "TT-RATE-SHARED", "severity": "info", "message": "The --rate is shared.",
		"rate_per_second": 400.0, "groups": 2.0, "nan": nil}}, doc.Input.Findings)
	require.Len(t, doc.Groups, 1)
	few := doc.Groups[0].Findings[0]
	assert.Equal(t, "TT-FEW-ABOVE", few["code"])
	assert.Equal(t, "warning", few["severity"])
	assert.Equal(t, g.Recommendation.Warnings[0], few["message"])
	assert.Equal(t, 2.0, few["samples_above"])
	assert.Nil(t, few["high_seconds"], "beyond the largest sample")
	assert.Contains(t, b.String(), `"code": "TT-FEW-ABOVE",
          "severity": "warning",
          "message": `, "code, severity and message first, indented as the rest")

	back, err := report.ReadJSON(bytes.NewReader(b.Bytes()), "r.json")
	require.NoError(t, err)
	assert.Equal(t, finding.Messages(back.Groups[0].Findings), append(back.Groups[0].Recommendation.Warnings, back.Groups[0].Policy.Warnings...))
	assert.Equal(t, finding.FewAbove, back.Groups[0].Findings[0].Code)
	assert.Equal(t, finding.Info, back.Input.Findings[0].Severity)
}

// TestJSONFindingsEmpty: a group without findings writes an empty list,
// not null, and a report written before findings existed reads back.
func TestJSONFindingsEmpty(t *testing.T) {
	h := histogram.New()
	for i := range 20000 {
		h.Record(time.Duration(i+1) * 50 * time.Microsecond)
	}
	rec, err := recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	require.Empty(t, rec.Findings)
	g := NewGroup(Result{Group: &histogram.Group{Name: "all", Latency: h}, Recommendation: rec, RateSource: "unknown"})
	b, err := json.Marshal(g)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"findings":[]`)

	old := `{"input": {"files": ["a.csv"], "records": 3, "bad_records": 0, "bad_examples": [], "notes": ["n"]},
	  "groups": [{"name": "all", "recommendation": {"timeout_seconds": 0.8, "warnings": ["w"]}, "policy": {"warnings": []}}]}`
	back, err := report.ReadJSON(strings.NewReader(old), "old.json")
	require.NoError(t, err)
	assert.Nil(t, back.Groups[0].Findings)
	assert.Nil(t, back.Input.Findings)
	assert.Equal(t, []string{"w"}, back.Groups[0].Recommendation.Warnings)
	assert.Equal(t, []string{"n"}, back.Input.Notes)
}
