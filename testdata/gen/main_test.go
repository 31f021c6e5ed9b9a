package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// TestRunJSON: -format json writes the CSV's rows as JSON lines, one per
// row, each a valid object with the row's values, the same for the same seed.
func TestRunJSON(t *testing.T) {
	args := []string{"-n", "300", "-seed", "4", "-start", "2026-01-01T00:00:00Z"}
	var csv, out, again bytes.Buffer
	require.NoError(t, run(args, &csv, io.Discard))
	require.NoError(t, run(append([]string{"-format", "json"}, args...), &out, io.Discard))
	require.NoError(t, run(append([]string{"-format", "json"}, args...), &again, io.Discard))
	assert.Equal(t, out.String(), again.String())
	rows := strings.Split(strings.TrimSuffix(csv.String(), "\n"), "\n")[1:]
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, len(rows))
	for i, line := range lines {
		var v struct {
			Time, Level, Method, Path string
			Status                    int
			LatencyMS                 json.Number `json:"latency_ms"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		f := strings.Split(rows[i], ",")
		assert.Equal(t, f[0], v.Time)
		assert.Equal(t, fmt.Sprintf("%s/%d", f[1], i*7919%100000), v.Path)
		assert.Equal(t, f[2], fmt.Sprint(v.Status))
		assert.Equal(t, f[3], v.LatencyMS.String())
	}
	assert.Regexp(t, `^\{"time":"2026-01-01T00:00:00\.\d{3}Z","level":"info","method":"GET","path":"/api/\w+/0","status":200,"latency_ms":\d+\.\d{3}\}$`, lines[0])
}
