package ingest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// TestColumnNotFoundNamesOption: a column the input does not have is an
// error about the option that named it, by key, and a usage error.
func TestColumnNotFoundNamesOption(t *testing.T) {
	_, err := NewCSV(strings.NewReader("latency_ms,status\n5,200\n"), "a.csv", CSVOptions{TimeColumn: "ts"})
	require.Error(t, err)
	o, ok := usage.OptionOf(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, usage.TimeColumn, o)
	assert.Equal(t, `a.csv: --time-column column "ts" not found; the columns are "latency_ms", "status"`, err.Error())
	var ue *usage.Error
	assert.ErrorAs(t, err, &ue, "still a usage error (exit 2)")
}
