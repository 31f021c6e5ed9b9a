package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// checkFixedPoint is the fixed point on what a real server measured: from
// the log it wrote, analyze fits a call policy (a deadline, 3 attempts,
// idempotent and not) and writes every snippet `check` reads; `check` of
// each, against the same log, finds every group served and nothing to
// warn about (docs/check.md, "One model of a call").
func checkFixedPoint(t *testing.T, o analysis.Options) {
	t.Helper()
	t.Run("check fixed point", func(t *testing.T) {
		for _, idempotent := range []bool{false, true} {
			for _, deadline := range []time.Duration{0, 1500 * time.Millisecond, 3 * time.Second} {
				o := o
				o.Policy.Deadline, o.Policy.Attempts, o.Policy.Idempotent = deadline, 3, idempotent
				rep, err := analysis.Run(context.Background(), o, nil)
				require.NoError(t, err)
				dir := t.TempDir()
				checked := 0
				for _, tg := range targets.All {
					if !tg.Reads() {
						continue
					}
					body, err := tg.Render(rep, target.Options{})
					require.NoError(t, err, tg.Name)
					p := filepath.Join(dir, tg.File)
					require.NoError(t, os.WriteFile(p, body, 0o644))
					c, err := analysis.Check(context.Background(), analysis.CheckOptions{Options: o, Configs: []string{p}, ConfigFormat: tg.Name}, nil)
					require.NoError(t, err, tg.Name)
					assert.Empty(t, c.UnmatchedGroups, "%s (deadline %v, idempotent %v): groups no object serves", tg.Name, deadline, idempotent)
					for _, f := range c.Findings {
						if !assert.Equal(t, "info", f.Severity, "%s (deadline %v, idempotent %v): [%s] %s (%s): %s",
							tg.Name, deadline, idempotent, f.Code, f.Object, f.Group, f.Message) {
							t.Logf("the %s snippet:\n%s", tg.Name, body)
						}
					}
					checked++
				}
				require.GreaterOrEqual(t, checked, 8, "every target check reads")
			}
		}
	})
}
