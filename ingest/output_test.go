package ingest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "data.csv")
	other := filepath.Join(dir, "report.txt")
	link := filepath.Join(dir, "latest.csv")
	for _, f := range []string{in, other} {
		require.NoError(t, os.WriteFile(f, []byte("latency_ms\n1\n"), 0o644))
	}
	require.NoError(t, os.Symlink("data.csv", link))
	tests := []struct {
		name   string
		output string
		inputs []string
		refuse bool
	}{
		{"the input itself", in, []string{in}, true},
		{"another name of it", filepath.Join(dir, ".", "data.csv"), []string{in}, true},
		{"matched by a glob", in, []string{filepath.Join(dir, "*.csv")}, true},
		{"through a link", link, []string{in}, true},
		{"among others", in, []string{"-", other, in}, true},
		{"another file", other, []string{in}, false},
		{"a new file", filepath.Join(dir, "new.txt"), []string{in}, false},
		{"standard output", "-", []string{"-"}, false},
		{"no output", "", []string{in}, false},
		{"a glob that matches nothing", in, []string{filepath.Join(dir, "*.log")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOutput(tt.output, tt.inputs)
			if !tt.refuse {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.output+" is also an input: writing it would destroy what is read", err.Error())
		})
	}
}
