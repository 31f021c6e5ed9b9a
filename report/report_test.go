package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// unknowns is a report whose rate, pool and connect timeout are unknown.
func unknowns() *Report {
	return &Report{
		Input: Input{Files: []string{"a.csv"}, Records: 12, BadRecords: 9,
			BadExamples: []string{`a.csv:2: column "latency_ms": "x" is not a number`}, Notes: []string{}},
		Groups: []Group{{
			Name: "all", Samples: 3, Excluded: map[string]int64{},
			Percentiles: []Percentile{{Quantile: 0.5, Seconds: 0.02}, {Quantile: 0.999, Seconds: 0.03, LowerBound: true}},
			Recommendation: Recommendation{
				Quantile: 0.999, BaseSeconds: 0.03, TimeoutSeconds: 0.06,
				Interval: Interval{Confidence: 0.95, LowSeconds: 0.02},
				Steps:    []Step{{Rule: "quantile", Seconds: 0.03, Reason: "r"}}, Warnings: []string{"w"},
			},
			Candidates: []Candidate{{TimeoutSeconds: 0.05, CutOffFraction: 0.5}},
			LittlesLaw: LittlesLaw{RateSource: "unknown", Verdict: "Give --rate."},
		}},
	}
}

func TestWriteTextUnknowns(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, unknowns()))
	out := b.String()
	assert.Contains(t, out, "Read 12 records from a.csv; 9 could not be used (75 %).")
	assert.Contains(t, out, "- ... and 8 more\n")
	assert.Contains(t, out, "p99.9       >= 30ms  95 % confidence: 20ms to beyond the largest sample")
	assert.Contains(t, out, "Connect timeout: not recommended")
	assert.Regexp(t, `50ms\s+50 %\s+-\s+-\n`, out, "unknown in-flight figures are dashes, not zeros")
	assert.Contains(t, out, "Give --rate.")
	assert.Contains(t, out, "\nWarning: w\n")
	for _, line := range strings.Split(out, "\n") {
		assert.Equal(t, strings.TrimRight(line, " \t"), line, "no trailing blanks")
	}
}

func TestWriteJSONNulls(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, unknowns()))
	var doc struct {
		Groups []struct {
			Recommendation map[string]any `json:"recommendation"`
			LittlesLaw     map[string]any `json:"littles_law"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	rec := doc.Groups[0].Recommendation
	assert.Contains(t, rec, "connect_timeout_seconds")
	assert.Nil(t, rec["connect_timeout_seconds"])
	assert.Nil(t, rec["interval"].(map[string]any)["high_seconds"])
	for _, k := range []string{"rate_per_second", "pool", "pool_exhausted", "bulkhead", "in_flight_during_hang"} {
		assert.Contains(t, doc.Groups[0].LittlesLaw, k)
		assert.Nil(t, doc.Groups[0].LittlesLaw[k], k)
	}
}

// TestInputDrop: a finding dropped by its code takes its own note with it,
// found by its place among the notes, not a note given alone that has the
// same words (text matching took that one, and left the finding's).
func TestInputDrop(t *testing.T) {
	in := Input{Notes: []string{"same words"}} // a note given as a string alone
	in.Note(finding.New(finding.DecoderNote, nil, "a.log: a note"))
	in.Note(finding.New(finding.StraddlingIntervals, nil, "same words"))
	in.Note(finding.New(finding.CoarseHistograms, nil, "coarse"))
	in.Note(finding.New(finding.StraddlingIntervals, nil, "again"))
	in.Drop(finding.StraddlingIntervals)
	assert.Equal(t, []string{"same words", "a.log: a note", "coarse"}, in.Notes)
	var codes []finding.Code
	for _, f := range in.Findings {
		codes = append(codes, f.Code)
	}
	assert.Equal(t, []finding.Code{finding.DecoderNote, finding.CoarseHistograms}, codes)

	in.Drop(finding.OneWindow) // none: nothing changes
	assert.Equal(t, []string{"same words", "a.log: a note", "coarse"}, in.Notes)
	assert.Len(t, in.Findings, 2)
}
