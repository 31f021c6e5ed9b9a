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

// TestNginxFormatErrorsNameOption: nginx's format errors are about the
// option that gave the format, by key, and name it as the CLI writes it.
func TestNginxFormatErrorsNameOption(t *testing.T) {
	_, _, err := nginxFormatOf(Options{LogFormatName: "main"})
	require.Error(t, err)
	o, ok := usage.OptionOf(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, usage.LogFormatName, o)
	assert.Equal(t, `--log-format-name "main" needs --nginx-conf, the config file that defines it`, err.Error())

	_, _, err = nginxFormatOf(Options{LogFormat: "log_format main"})
	require.Error(t, err)
	o, _ = usage.OptionOf(err)
	assert.Equal(t, usage.LogFormat, o)
	assert.Equal(t, `--log-format: a log_format directive needs a name and a format: "log_format main"`, err.Error())

	saved := usage.Render
	t.Cleanup(func() { usage.Render = saved })
	usage.Render = func(o usage.Option) string { return "<" + string(o) + ">" }
	nf, ok, err := nginxFormatOf(Options{LogFormat: `$request_time`})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "<log-format>", nf.origin, "the format is named in errors by its option, as the CLI writes it")
}
