package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// TestOptionKeysAreFlags: every option the library names by key is a flag
// of some command, and the CLI writes the key as that flag.
func TestOptionKeysAreFlags(t *testing.T) {
	flags := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = append(flags[f.Name], c.Name()) })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(nil, io.Discard, io.Discard))
	for _, o := range usage.Options() {
		assert.NotEmpty(t, flags[string(o)], "the option %q is no flag of any command", string(o))
		assert.Equal(t, "--"+string(o), o.String(), "the CLI writes %q as its flag", string(o))
	}
	assert.Equal(t, "--false-timeouts", usage.FalseTimeouts.String())
	assert.Contains(t, flags["false-timeouts"], "check")
}

// TestLibraryErrorNamesOption: an error of the library about an option
// carries its key, and its message names the option as the CLI writes it,
// through the CLI's renderer (swapped here: the library spells no flag).
func TestLibraryErrorNamesOption(t *testing.T) {
	_, err := analysis.Summarize(context.Background(), analysis.Options{}, 1500*time.Millisecond, nil, io.Discard)
	require.Error(t, err)
	o, ok := usage.OptionOf(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, usage.Interval, o)
	assert.Equal(t, "--interval 1.5s: want whole seconds, at least 1s", err.Error())

	saved := usage.Render
	t.Cleanup(func() { usage.Render = saved })
	usage.Render = func(o usage.Option) string { return "<" + string(o) + ">" }
	_, err = analysis.Summarize(context.Background(), analysis.Options{}, 1500*time.Millisecond, nil, io.Discard)
	assert.Equal(t, "<interval> 1.5s: want whole seconds, at least 1s", err.Error())
}
