package targets

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenDir holds the snippets of every fixture, one folder per fixture.
const goldenDir = "../../testdata/golden/snippets"

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	path = filepath.Join(goldenDir, path)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./target/targets -update to create it")
	assert.Equal(t, string(want), string(got))
}

// TestGolden pins every target's snippet of each fixture; each target's own
// package has its parser read them (targettest.Snippets).
func TestGolden(t *testing.T) {
	for _, f := range targettest.Fixtures {
		r := targettest.LoadReport(t, f.Report)
		for _, tg := range All {
			if !f.For(tg) {
				continue
			}
			t.Run(f.Name+"/"+tg.Name, func(t *testing.T) {
				got, err := tg.Render(r, f.Opts)
				require.NoError(t, err)
				golden(t, filepath.Join(f.Name, tg.File), got)
				if tg.Comment == "" {
					notes, err := tg.Explain(r, f.Opts)
					require.NoError(t, err)
					golden(t, filepath.Join(f.Name, tg.File+".txt"), []byte(strings.Join(notes, "\n")+"\n"))
				}
			})
		}
	}
}

// TestRegistry checks that every target has a name, a distinct file name
// and a summary, that Names is the order of All, and that unknown names
// are refused with the list of known ones.
func TestRegistry(t *testing.T) {
	files, names := map[string]bool{}, map[string]bool{}
	require.Len(t, Names(), len(All))
	for i, tg := range All {
		assert.Equal(t, tg.Name, Names()[i], "Names is in the order of All")
		assert.Equal(t, strings.ToLower(strings.TrimSpace(tg.Name)), tg.Name, "ParseList finds a name in lower case")
		assert.NotContains(t, tg.Name, ",")
		assert.NotEqual(t, "all", tg.Name)
		assert.False(t, names[tg.Name], "name %s twice", tg.Name)
		names[tg.Name] = true
		assert.False(t, files[tg.File], "file %s twice", tg.File)
		files[tg.File] = true
		assert.NotEmpty(t, tg.Summary)
		assert.NotNil(t, tg.Write, tg.Name)
		got, err := Lookup(tg.Name)
		require.NoError(t, err)
		assert.Equal(t, tg.File, got.File, "Lookup finds %s", tg.Name)
	}
	require.GreaterOrEqual(t, len(All), 2)
	first, second := All[0].Name, All[1].Name

	_, err := ParseList(first + ",bogus")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown snippet target "bogus"`)
	assert.Contains(t, err.Error(), strings.Join(Names(), ", "))

	all, err := ParseList("all")
	require.NoError(t, err)
	assert.Len(t, all, len(All))
	two, err := ParseList(" " + strings.ToUpper(second) + " , " + first + "," + second)
	require.NoError(t, err)
	require.Len(t, two, 2)
	assert.Equal(t, []string{first, second}, []string{two[0].Name, two[1].Name}, "registry order, no duplicates")
	_, err = ParseList(" , ")
	require.Error(t, err)

	_, err = Render(first, &report.Report{}, target.Options{})
	require.Error(t, err, "a report without groups")
}

// TestOneAttempt: without a call policy a snippet has no retries, and
// targets that retry by default are told not to.
func TestOneAttempt(t *testing.T) {
	r := targettest.LoadReport(t, "mixture.json")
	for name, want := range map[string]string{
		"istio":   "attempts: 0",
		"haproxy": "retries 0",
		"nginx":   "proxy_next_upstream off;",
		"linkerd": "timeout.linkerd.io/request: \"800ms\"\nspec:",
	} {
		body, err := Render(name, r, target.Options{})
		require.NoError(t, err)
		assert.Contains(t, string(body), want, name)
	}
	for _, name := range []string{"envoy", "grpc"} {
		body, err := Render(name, r, target.Options{})
		require.NoError(t, err)
		assert.NotContains(t, string(body), "retry_policy:", name)
		assert.NotContains(t, string(body), "retryPolicy", name)
	}
}
