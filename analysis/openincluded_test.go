package analysis

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/target/nginx"
)

// TestOpenIncludedGlobDirs: check's opener marks directories, a symbolic
// link to one too, so that an nginx include with a glob in a directory
// (sites/*/*.conf, which nginx reads) is read; it was refused ("a glob is
// read only in the last path element").
func TestOpenIncludedGlobDirs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("sites/a/x.conf", "server { location /a { proxy_pass http://127.0.0.1:1; } }\n")
	write("real/b/x.conf", "server { location /b { proxy_pass http://127.0.0.1:2; } }\n")
	write("sites/file.conf", "# a file, not a directory\n")
	require.NoError(t, os.Symlink(filepath.Join(dir, "real", "b"), filepath.Join(dir, "sites", "b")))

	listing, err := openIncluded(filepath.Join(dir, "sites"))
	require.NoError(t, err)
	assert.Equal(t, "a/\nb/\nfile.conf\n", string(listing))

	main := filepath.Join(dir, "nginx.conf")
	objs, err := nginx.ReadConfig(main, []byte("http {\n    include sites/*/*.conf;\n}\n"), openIncluded, nil)
	require.NoError(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.Name+" "+o.Pos.String())
	}
	assert.Equal(t, []string{
		"server location /a " + filepath.Join(dir, "sites", "a", "x.conf") + ":1",
		"server location /b " + filepath.Join(dir, "sites", "b", "x.conf") + ":1",
	}, names)
}

// TestOpenIncludedRegularOnly: check's opener reads an include from a
// regular file only, as --nginx-conf does (budget.Includable): a named
// pipe waited for a writer for ever, /dev/zero was read to the 16 MiB cap.
func TestOpenIncludedRegularOnly(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.conf"), 0o644))
	main := filepath.Join(dir, "nginx.conf")
	for _, tt := range []struct{ include, want string }{
		{"pipe.conf", main + `:2: include "pipe.conf": ` + filepath.Join(dir, "pipe.conf") + `: not a regular file (a named pipe); an include is read only from a regular file`},
		{"/dev/zero", main + `:2: include "/dev/zero": /dev/zero: not a regular file (a device); an include is read only from a regular file`},
	} {
		_, err := nginx.ReadConfig(main, []byte("http {\n    include "+tt.include+";\n}\n"), openIncluded, nil)
		assert.EqualError(t, err, tt.want)
	}
}

// TestOpenIncludedDash: an include of "-" is the file named "-" beside the
// config, as nginx reads it, never standard input (the opener once took
// "-" for it, with none to read: a panic).
func TestOpenIncludedDash(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "-"), []byte("server { location /dash { proxy_pass http://127.0.0.1:1; } }\n"), 0o644))
	main := filepath.Join(dir, "nginx.conf")
	objs, err := nginx.ReadConfig(main, []byte("http {\n    include -;\n}\n"), openIncluded, nil)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "server location /dash "+filepath.Join(dir, "-")+":1", objs[0].Name+" "+objs[0].Pos.String())
}
