package analysis

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
)

// TestCheckFinding: the one constructor carries the finding's code,
// severity, message and numbers, and the place it is given.
func TestCheckFinding(t *testing.T) {
	f := finding.Newf(finding.CheckNoJitter, finding.Fields{"attempts": 3}, "retries go at once")
	got := checkFinding(f, target.Pos{File: "envoy.yaml", Line: 12}, "envoy", "route api", "/api")
	assert.Equal(t, report.CheckFinding{Code: "TT-CHECK-NO-JITTER", Severity: "warning", File: "envoy.yaml", Line: 12,
		Target: "envoy", Object: "route api", Group: "/api", Message: "retries go at once",
		Measured: finding.Fields{"attempts": int64(3)}}, got)
	fits := checkFinding(finding.New(finding.CheckTimeoutFits, nil, "m"), target.Pos{File: "a.conf", Line: 3}, "nginx", "location /", "")
	assert.Equal(t, "info", fits.Severity, "the severity codes.go declares for %s", finding.CheckTimeoutFits)
	assert.Empty(t, fits.Group)
}

// TestCheckFindingsMadeOnce fails when code of this package builds a
// report.CheckFinding literal outside checkFinding.
func TestCheckFindingsMadeOnce(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		file, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "checkFinding" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || len(lit.Elts) == 0 {
					return true
				}
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "CheckFinding" {
					t.Errorf("%s: a report.CheckFinding built in %s; make it with checkFinding", fset.Position(lit.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	}
}

// TestCheckNotesCoded: every note of check is a finding with a code: a
// config that holds no policy (TT-CHECK-NO-POLICY, with the file and the
// readers), an object's reader note (TT-CHECK-CONFIG-NOTE, at its line).
func TestCheckNotesCoded(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"methodConfig": []}`), 0o600))
	hedge := filepath.Join(dir, "hedge.yaml")
	require.NoError(t, os.WriteFile(hedge, []byte(`virtual_hosts:
- name: api
  domains: ["*"]
  routes:
  - match: {prefix: "/"}
    route:
      cluster: api
      timeout: 1s
      hedge_policy: {hedge_on_per_try_timeout: true}
`), 0o600))
	o := checkOptions()
	o.Configs = []string{empty, hedge}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	require.NotEmpty(t, c.NoteFindings)
	assert.Equal(t, finding.Messages(c.NoteFindings), c.Notes)
	none := c.NoteFindings[0]
	assert.Equal(t, finding.CheckNoPolicy, none.Code)
	assert.Equal(t, empty, none.Fields["file"])
	assert.Equal(t, []string{"grpc"}, none.Fields["targets"])
	var notes []report.Finding
	for _, f := range c.NoteFindings {
		if f.Code == finding.CheckConfigNote {
			notes = append(notes, f)
		}
	}
	require.NotEmpty(t, notes, "%q", c.Notes)
	assert.Equal(t, hedge, notes[0].Fields["file"])
	assert.Equal(t, "envoy", notes[0].Fields["target"])
	assert.Equal(t, "hedge_policy without a retry_policy: Envoy sends no hedge", notes[0].Fields["note"])
	assert.EqualValues(t, 5, notes[0].Fields["line"], "the route's line")
	for _, f := range c.NoteFindings {
		_, ok := finding.Lookup(f.Code)
		assert.True(t, ok, "%s is declared (and so documented)", f.Code)
	}
}
