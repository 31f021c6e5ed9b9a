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
