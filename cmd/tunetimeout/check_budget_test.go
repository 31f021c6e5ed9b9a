package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckBudget: the bounds of a run end it with one line that names
// the bound and where it was reached; the budget is the run's, over every
// config given.
func TestCheckBudget(t *testing.T) {
	dir := t.TempDir()
	// Anchors nested nine deep, each an alias list nine wide: 387 million
	// nodes from 486 bytes (more than 6 GB before the budget).
	var b strings.Builder
	b.WriteString("x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	b.WriteString("resilience4j.retry.instances.a.maxAttempts: 3\n")
	bomb := filepath.Join(dir, "application.yml")
	require.NoError(t, os.WriteFile(bomb, []byte(b.String()), 0o644))
	_, errOut, code := execute(t, "", "check", bomb, "--data", mixture)
	assert.Equal(t, 1, code)
	assert.Equal(t, "tunetimeout: "+bomb+":1: YAML nodes with aliases expanded: over the node budget of one run, 1,048,576 nodes in all\n", errOut)

	// Five files of 15 MiB each: each under the cap of one file, the
	// fifth over the 64 MiB of the run.
	var files []string
	for i := range 5 {
		f := filepath.Join(dir, fmt.Sprintf("c%d.conf", i))
		require.NoError(t, os.WriteFile(f, []byte(strings.Repeat("#"+strings.Repeat("x", 1022)+"\n", 15<<10)), 0o644))
		files = append(files, f)
	}
	_, errOut, code = execute(t, "", append(append([]string{"check"}, files...), "--data", mixture)...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "tunetimeout: "+files[4]+": over the byte budget of one run, 64 MiB in all\n", errOut)
}
