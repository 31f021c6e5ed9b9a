package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestApplyBaseline: a finding of the baseline is accepted where it moved
// to another line, once; a new one, or one of another object, still fails.
func TestApplyBaseline(t *testing.T) {
	f := func(code, object string, line int) CheckFinding {
		return CheckFinding{Code: code, Severity: "error", File: "envoy.yaml", Line: line, Object: object, Group: "all"}
	}
	base := &Check{Findings: []CheckFinding{f("TT-CHECK-TIMEOUT-CUTS-OFF", "route 1", 21)}}
	var b bytes.Buffer
	require.NoError(t, WriteCheckJSON(&b, base))
	read, err := ReadCheckJSON(&b, "base.json")
	require.NoError(t, err)

	now := &Check{Findings: []CheckFinding{f("TT-CHECK-TIMEOUT-CUTS-OFF", "route 1", 25), f("TT-CHECK-TIMEOUT-CUTS-OFF", "route 2", 40)}}
	assert.Equal(t, 1, now.ApplyBaseline(read))
	assert.True(t, now.Findings[0].Baseline, "moved from line 21 to 25: still known")
	assert.False(t, now.Findings[1].Baseline)
	assert.True(t, now.AtLeast("error"), "route 2 is new")

	only := &Check{Findings: []CheckFinding{f("TT-CHECK-TIMEOUT-CUTS-OFF", "route 1", 25)}}
	only.ApplyBaseline(read)
	assert.False(t, only.AtLeast("info"), "a known finding fails nothing")

	twice := &Check{Findings: []CheckFinding{f("TT-CHECK-TIMEOUT-CUTS-OFF", "route 1", 25), f("TT-CHECK-TIMEOUT-CUTS-OFF", "route 1", 30)}}
	assert.Equal(t, 1, twice.ApplyBaseline(read), "one known finding accepts one")

	_, err = ReadCheckJSON(bytes.NewReader([]byte("# not json")), "x.json")
	assert.ErrorContains(t, err, "x.json: not a check written with -o json")
}
