package targets

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/outfile"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// goldenFile is a snippet of the mixture fixture as TestGolden pins it.
func goldenFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, "mixture", name))
	require.NoError(t, err)
	return string(b)
}

func targetsOf(t *testing.T, list string) []target.Target {
	t.Helper()
	ts, err := ParseList(list)
	require.NoError(t, err)
	return ts
}

func TestRenderAll(t *testing.T) {
	r := targettest.LoadReport(t, "mixture.json")
	rs, err := target.RenderAll(context.Background(), r, targetsOf(t, "all"), target.Options{})
	require.NoError(t, err)
	require.Len(t, rs, len(All))
	for i, s := range rs {
		assert.Equal(t, All[i].Name, s.Name, "registry order")
		assert.Equal(t, goldenFile(t, s.File), string(s.Body), s.Name)
		if s.Comment == "" {
			assert.Equal(t, goldenFile(t, s.File+".txt"), strings.Join(s.Notes, "\n")+"\n", "the notes of %s, which has no comments", s.Name)
		} else {
			assert.Nil(t, s.Notes, "%s says it in its comments", s.Name)
		}
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("interrupted")
	cancel(stop)
	rs, err = target.RenderAll(ctx, r, targetsOf(t, "envoy"), target.Options{})
	assert.ErrorIs(t, err, stop)
	assert.Nil(t, rs, "none when cancelled")

	rs, err = target.RenderAll(context.Background(), &report.Report{}, targetsOf(t, "envoy"), target.Options{})
	assert.Error(t, err, "a report without a recommendation has nothing to render")
	assert.Nil(t, rs)
}

func TestEmbed(t *testing.T) {
	r := targettest.LoadReport(t, "mixture.json")
	rs, err := target.RenderAll(context.Background(), r, targetsOf(t, "grpc,envoy"), target.Options{})
	require.NoError(t, err)
	target.Embed(r, rs)
	require.Len(t, r.Snippets, 2)
	assert.Equal(t, report.Snippet{Target: "envoy", File: "envoy.yaml", Text: goldenFile(t, "envoy.yaml"), Language: "yaml"}, r.Snippets[0])
	assert.Equal(t, "grpc", r.Snippets[1].Target)
	assert.Equal(t, goldenFile(t, "grpc.json"), r.Snippets[1].Text)
	assert.NotEmpty(t, r.Snippets[1].Notes)
}

func TestPrint(t *testing.T) {
	r := targettest.LoadReport(t, "mixture.json")
	render := func(list string) []target.Rendered {
		rs, err := target.RenderAll(context.Background(), r, targetsOf(t, list), target.Options{})
		require.NoError(t, err)
		return rs
	}
	envoy, grpc := goldenFile(t, "envoy.yaml"), goldenFile(t, "grpc.json")
	grpcNotes := "# " + strings.ReplaceAll(strings.TrimSuffix(goldenFile(t, "grpc.json.txt"), "\n"), "\n", "\n# ") + "\n"
	tests := []struct {
		name      string
		list      string
		alone     bool
		out, note string
	}{
		{"one alone is bare", "envoy", true, envoy, ""},
		{"one alone without comments: its notes beside it", "grpc", true, grpc, grpcNotes},
		{"several alone", "envoy,grpc", true,
			"# --- envoy.yaml (envoy) ---\n" + envoy + "\n# --- grpc.json (grpc) ---\n" + grpcNotes + grpc, ""},
		{"after a report", "envoy", false, "\n# --- envoy.yaml (envoy) ---\n" + envoy, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, notes bytes.Buffer
			require.NoError(t, target.Print(&out, &notes, render(tt.list), tt.alone))
			assert.Equal(t, tt.out, out.String())
			assert.Equal(t, tt.note, notes.String())
		})
	}
}

func TestWriteDir(t *testing.T) {
	r := targettest.LoadReport(t, "mixture.json")
	rs, err := target.RenderAll(context.Background(), r, targetsOf(t, "all"), target.Options{})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "config", "client")
	var log bytes.Buffer
	var temps outfile.Temps
	require.NoError(t, target.WriteDir(context.Background(), &temps, dir, rs, &log))
	var files []string
	for _, tg := range All {
		files = append(files, tg.File)
		b, err := os.ReadFile(filepath.Join(dir, tg.File))
		require.NoError(t, err)
		assert.Equal(t, goldenFile(t, tg.File), string(b), tg.File)
	}
	assert.Equal(t, "Wrote "+strings.Join(files, ", ")+" to "+dir+".\n", log.String())
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, es, len(files), "no temporary file left")

	// Cancelled: every file as it was, nothing said.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "envoy.yaml"), []byte("mine"), 0o644))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupted"))
	log.Reset()
	require.Error(t, target.WriteDir(ctx, &temps, dir, rs, &log))
	b, err := os.ReadFile(filepath.Join(dir, "envoy.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))
	assert.Empty(t, log.String())
	es, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, es, len(files), "no temporary file left")

	// A file that cannot be written (a directory in its place): none is
	// replaced, not even those before it.
	require.NoError(t, os.Remove(filepath.Join(dir, "nginx.conf")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "nginx.conf"), 0o755))
	require.Error(t, target.WriteDir(context.Background(), &temps, dir, rs, &log))
	b, err = os.ReadFile(filepath.Join(dir, "envoy.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "envoy.yaml, before nginx.conf, is not replaced")
}
