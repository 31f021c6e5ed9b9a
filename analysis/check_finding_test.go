package analysis

import (
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
