package nginx_test

import (
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/nginx"
)

// The names read_test.go calls the shared helpers by, where it was a test
// of target/targets: its text stays as it was.
var (
	configFixtureDir      = targettest.ConfigFixtureDir
	requireConfigFixtures = targettest.RequireConfigFixtures
	loadReport            = targettest.LoadReport
	requireTool           = targettest.RequireTool
	runTool               = targettest.RunTool
	lbMountOpener         = targettest.LBMountOpener
	lbSummaries           = targettest.LBSummaries
	lbNoteWith            = targettest.LBNoteWith
	lbObjectNamed         = targettest.LBObjectNamed
	lbCheckLines          = targettest.LBCheckLines
	bounded               = targettest.Bounded
)

// fixtures are targettest.Fixtures with the field names of read_test.go.
var fixtures = func() (out []struct {
	name, report string
	opts         target.Options
	only         string
}) {
	for _, f := range targettest.Fixtures {
		out = append(out, struct {
			name, report string
			opts         target.Options
			only         string
		}{f.Name, f.Report, f.Opts, f.Only})
	}
	return out
}()

// Render writes nginx's snippet; name is "nginx".
func Render(name string, r *report.Report, o target.Options) ([]byte, error) {
	if name != nginx.Target.Name {
		panic("nginx's tests render nginx only, not " + name)
	}
	return nginx.Target.Render(r, o)
}
