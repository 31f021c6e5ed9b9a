package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-n", "1000", "-seed", "3", "-rate", "50", "-start", "2026-01-01T00:00:00Z"}, &out, io.Discard))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, "timestamp,route,status,latency_ms", lines[0])
	assert.Equal(t, 1000, strings.Count(out.String(), ",200,"))
	assert.True(t, strings.HasPrefix(lines[1], "2026-01-01T00:00:0"), lines[1])

	var again bytes.Buffer
	require.NoError(t, run([]string{"-n", "1000", "-seed", "3", "-rate", "50", "-start", "2026-01-01T00:00:00Z"}, &again, io.Discard))
	assert.Equal(t, out.String(), again.String())
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-start", "yesterday"}, "-start"},
		{[]string{"-rate", "0"}, "rate"},
		{[]string{"-n", "-1"}, "-n"},
		{[]string{"extra"}, "unexpected"},
	}
	for _, tt := range tests {
		err := run(tt.args, io.Discard, io.Discard)
		assert.ErrorContains(t, err, tt.want, "%q", tt.args)
	}
}

// TestRunNginx: -format nginx writes n lines of the combined format plus
// the two times, the same for the same seed.
func TestRunNginx(t *testing.T) {
	var out, again bytes.Buffer
	args := []string{"-format", "nginx", "-n", "500", "-seed", "2", "-start", "2026-01-01T00:00:00Z"}
	require.NoError(t, run(args, &out, io.Discard))
	require.NoError(t, run(args, &again, io.Discard))
	assert.Equal(t, out.String(), again.String())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 500)
	assert.Regexp(t, `^10\.0\.\d+\.\d+ - - \[01/Jan/2026:00:00:0\d \+0000\] "GET /\S+ HTTP/1\.1" (200|500) \d+ "[^"]*" "[^"]+" \d+\.\d{3} \d+\.\d{3}$`, lines[0])
	assert.ErrorContains(t, run([]string{"-format", "xml"}, io.Discard, io.Discard), "-format")
}
