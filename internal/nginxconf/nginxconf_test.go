package nginxconf

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/budget"
)

// flat is a read's directives as "line: name [args]" lines, a block's
// directives indented under it.
func flat(ds []*Directive) []string {
	var out []string
	var walk func(ds []*Directive, indent string)
	walk = func(ds []*Directive, indent string) {
		for _, d := range ds {
			s := fmt.Sprintf("%s%s:%d %q", indent, d.File, d.Line, d.Name)
			for _, a := range d.Args {
				s += fmt.Sprintf(" %q@%d", a.Value, a.Line)
			}
			if d.IsBlock {
				s += " {"
			}
			out = append(out, s)
			walk(d.Block, indent+"  ")
		}
	}
	walk(ds, "")
	return out
}

func TestReadWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"quoted strings with escaped quotes",
			`a "b \"c\" d" 'e \'f\'' "g'h";`,
			[]string{`t.conf:1 "a" "b \"c\" d"@1 "e 'f'"@1 "g'h"@1`}},
		{"escapes: \\t \\r \\n \\\\ read, others kept",
			`a \t\r\n \\x \q b\;c "\$";`,
			[]string{`t.conf:1 "a" "\t\r\n"@1 "\\x"@1 "\\q"@1 "b\\;c"@1 "\\$"@1`}},
		{"$var and ${var}: the brace after $ is no block",
			`log_format x $a${b}c "${d}" ${{e;`,
			[]string{`t.conf:1 "log_format" "x"@1 "$a${b}c"@1 "${d}"@1 "${{e"@1`}},
		{"a brace after a word's $ only",
			"a b${ c{ d; }",
			[]string{`t.conf:1 "a" "b${"@1 "c"@1 {`, `  t.conf:1 "d"`}},
		{"comments where a word starts, not inside one",
			"a b#c # d;\n e; # f {\n#g\n",
			[]string{`t.conf:1 "a" "b#c"@1 "e"@2`}},
		{"a comment after a directive and a brace",
			"a;#b;\nc {#d\n}#e\n",
			[]string{`t.conf:1 "a"`, `t.conf:2 "c" {`}},
		{"nested blocks",
			"http {\n  server {\n    location / { proxy_pass http://u; }\n  }\n}\nevents {}\n",
			[]string{`t.conf:1 "http" {`, `  t.conf:2 "server" {`, `    t.conf:3 "location" "/"@3 {`, `      t.conf:3 "proxy_pass" "http://u"@3`, `t.conf:6 "events" {`}},
		{"a quoted word over lines keeps its first line",
			"a 'b\nc'\n  d\n;",
			[]string{`t.conf:1 "a" "b\nc"@1 "d"@3`}},
		{"a backslash-newline is a line too",
			"a b\\\nc;\nd;",
			[]string{`t.conf:1 "a" "b\\\nc"@1`, `t.conf:3 "d"`}},
		{"a quoted word before )",
			`if ($a = "b") { c; }`,
			[]string{`t.conf:1 "if" "($a"@1 "="@1 "b"@1 ")"@1 {`, `  t.conf:1 "c"`}},
		{"a closing brace inside a word is the word's",
			"a b}c;",
			[]string{`t.conf:1 "a" "b}c"@1`}},
		{"CR LF",
			"a\r\nb;\r\n",
			[]string{`t.conf:1 "a" "b"@2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Read("t.conf", []byte(tt.in), Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, flat(ds))
		})
	}
}

// TestDirectiveArg: Arg is an argument's value, quotes removed, and ""
// past the last one.
func TestDirectiveArg(t *testing.T) {
	ds, err := Read("t.conf", []byte(`a "b c" d;`), Options{})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, []string{"b c", "d", ""}, []string{ds[0].Arg(0), ds[0].Arg(1), ds[0].Arg(2)})
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     string
		quote    int
	}{
		{"an unterminated double quote", "a;\nb \"c;\nd;\n", `t.conf:4: unexpected end of file, expecting ";" or "}"`, 2},
		{"an unterminated single quote", "a '\\'", `t.conf:1: unexpected end of file, expecting ";" or "}"`, 1},
		{"an unterminated brace", "http {\n  a;\n", `t.conf:3: unexpected end of file, expecting "}"`, 0},
		{"a directive without its ;", "a;\nb c", `t.conf:2: unexpected end of file, expecting ";" or "}"`, 0},
		{"a stray closing brace", "a;\n}\n", `t.conf:2: unexpected "}"`, 0},
		{"a closing brace after words", "a {\n b }", `t.conf:2: unexpected "}"`, 0},
		{"a word right after a quote", "a 'b'c;", `t.conf:1: unexpected "c"`, 0},
		{"a comment right after a quote", "a\n\"b\"#c;", `t.conf:2: unexpected "#"`, 0},
		{"a ; alone", "a;\n;", `t.conf:2: unexpected ";"`, 0},
		{"a { alone", "{}", `t.conf:1: unexpected "{"`, 0},
		{"an include without a file", "include;", `t.conf:1: invalid number of arguments in "include" directive`, 0},
		{"an include and no opener", "a;\ninclude x.conf;", `t.conf:2: include "x.conf": no way to open included files`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read("t.conf", []byte(tt.in), Options{})
			require.EqualError(t, err, tt.want)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tt.quote, e.QuoteLine)
		})
	}
}

func TestReadOpenEnd(t *testing.T) {
	for in, want := range map[string][]string{
		"log_format x '$a'": {`v:1 "log_format" "x"@1 "$a"@1`},
		"log_format x $a":   {`v:1 "log_format" "x"@1 "$a"@1`},
		"a b # c":           {`v:1 "a" "b"@1`},
		"a; b":              {`v:1 "a"`, `v:1 "b"`},
		"include x; a 'b' ": {`v:1 "include" "x"@1`, `v:1 "a" "b"@1`},
	} {
		ds, err := Read("v", []byte(in), Options{OpenEnd: true, KeepIncludes: true})
		require.NoError(t, err, in)
		assert.Equal(t, want, flat(ds), in)
	}
	_, err := Read("v", []byte("a 'b"), Options{OpenEnd: true})
	assert.EqualError(t, err, `v:1: unexpected end of file, expecting ";" or "}"`)
}

// mapFS is files by path for Include and List: a directory is every
// path under it.
type mapFS map[string]string

func (m mapFS) options() Options {
	return Options{
		Include: func(_, file string) ([]byte, error) {
			if s, ok := m[file]; ok {
				return []byte(s), nil
			}
			return nil, fmt.Errorf("open %s: %w", file, fs.ErrNotExist)
		},
		List: func(dir string) ([]Entry, error) {
			seen := map[string]bool{}
			var out []Entry
			for f := range m {
				if rest, ok := strings.CutPrefix(f, dir+"/"); ok {
					n, _, sub := strings.Cut(rest, "/")
					if !seen[n] {
						seen[n] = true
						out = append(out, Entry{Name: n, Dir: sub})
					}
				}
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("open %s: %w", dir, fs.ErrNotExist)
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Name > out[j].Name }) // unsorted: the reader sorts
			return out, nil
		},
	}
}

func TestReadIncludes(t *testing.T) {
	files := mapFS{
		"/etc/nginx/nginx.conf":             "http {\n  include conf.d/*.conf;\n  include /etc/nginx/none/*.conf;\n  include snippets/s.conf;\n}\n",
		"/etc/nginx/conf.d/b.conf":          "b;\n",
		"/etc/nginx/conf.d/a.conf":          "\na;\n",
		"/etc/nginx/conf.d/.hidden.conf":    "hidden;\n",
		"/etc/nginx/conf.d/c.txt":           "txt;\n",
		"/etc/nginx/snippets/s.conf":        "s 1;\n",
		"/etc/nginx/conf.d/snippets/s.conf": "s 2;\n",
	}
	ds, err := Read("/etc/nginx/nginx.conf", []byte(files["/etc/nginx/nginx.conf"]), files.options())
	require.NoError(t, err)
	assert.Equal(t, []string{
		`/etc/nginx/nginx.conf:1 "http" {`,
		`  /etc/nginx/conf.d/a.conf:2 "a"`, // sorted, the hidden file and the .txt left out
		`  /etc/nginx/conf.d/b.conf:1 "b"`,
		`  /etc/nginx/snippets/s.conf:1 "s" "1"@1`, // from the conf prefix, not conf.d
	}, flat(ds))

	t.Run("a pattern with a leading dot matches hidden files", func(t *testing.T) {
		ds, err := Read("/etc/nginx/nginx.conf", []byte("include conf.d/.*.conf;"), files.options())
		require.NoError(t, err)
		assert.Equal(t, []string{`/etc/nginx/conf.d/.hidden.conf:1 "hidden"`}, flat(ds))
	})
	t.Run("a missing file, told or refused", func(t *testing.T) {
		o := files.options()
		_, err := Read("/etc/nginx/nginx.conf", []byte("a;\ninclude gone.conf;"), o)
		assert.EqualError(t, err, `/etc/nginx/nginx.conf:2: include "gone.conf": open /etc/nginx/gone.conf: file does not exist`)
		var missing []string
		o.Missing = func(f string) { missing = append(missing, f) }
		ds, err := Read("/etc/nginx/nginx.conf", []byte("include gone.conf; include snippets/s.conf;"), o)
		require.NoError(t, err)
		assert.Equal(t, []string{"/etc/nginx/gone.conf"}, missing)
		assert.Equal(t, []string{`/etc/nginx/snippets/s.conf:1 "s" "1"@1`}, flat(ds))
	})
	t.Run("an included file cannot close the block that includes it", func(t *testing.T) {
		fs := mapFS{"/c/close.conf": "a;\n}\n"}
		_, err := Read("/c/nginx.conf", []byte("http {\n include close.conf;\n}\n"), fs.options())
		assert.EqualError(t, err, `/c/close.conf:2: unexpected "}"`)
	})
	t.Run("a bad pattern", func(t *testing.T) {
		_, err := Read("/etc/nginx/nginx.conf", []byte("include conf.d/[a.conf;"), files.options())
		assert.EqualError(t, err, `/etc/nginx/nginx.conf:1: include "conf.d/[a.conf": syntax error in pattern`)
	})
}

func TestReadIncludeLimits(t *testing.T) {
	t.Run("a file that includes itself", func(t *testing.T) {
		fs := mapFS{"/c/loop.conf": "# again\ninclude loop.conf;\n"}
		_, err := Read("/c/nginx.conf", []byte("include loop.conf;"), fs.options())
		require.EqualError(t, err, `/c/loop.conf:2: include "loop.conf": includes nested more than 16 deep (an include loop?)`)
		var e *Error
		require.True(t, errors.As(err, &e))
		assert.Equal(t, KindIncludeDepth, e.Kind)
		assert.Equal(t, "/c/loop.conf", e.Path)
	})
	t.Run("two files that include each other", func(t *testing.T) {
		fs := mapFS{"/c/a.conf": "include b.conf;", "/c/b.conf": "x;\ninclude a.conf;"}
		_, err := Read("/c/nginx.conf", []byte("include a.conf;"), fs.options())
		assert.EqualError(t, err, `/c/b.conf:2: include "a.conf": includes nested more than 16 deep (an include loop?)`)
	})
	t.Run("16 deep is read", func(t *testing.T) {
		fs := mapFS{}
		for i := 1; i < 16; i++ {
			fs[fmt.Sprintf("/c/%d.conf", i)] = fmt.Sprintf("include %d.conf;", i+1)
		}
		fs["/c/16.conf"] = "deep;"
		ds, err := Read("/c/nginx.conf", []byte("include 1.conf;"), fs.options())
		require.NoError(t, err)
		assert.Equal(t, []string{`/c/16.conf:1 "deep"`}, flat(ds))
	})
	t.Run("files in all", func(t *testing.T) {
		fs := mapFS{"/c/a.conf": "a;\n"}
		main := strings.Repeat("include a.conf;\n", MaxFiles)
		_, err := Read("/c/nginx.conf", []byte(main), fs.options())
		assert.EqualError(t, err, fmt.Sprintf(`/c/nginx.conf:%d: include "a.conf": more than %d files in all`, MaxFiles, MaxFiles))
		ds, err := Read("/c/nginx.conf", []byte(strings.Repeat("include a.conf;\n", MaxFiles-1)), fs.options())
		require.NoError(t, err)
		assert.Len(t, ds, MaxFiles-1)
	})
	t.Run("words in all, from the run's budget", func(t *testing.T) {
		b := budget.New()
		require.NoError(t, b.Nodes(budget.MaxNodes-3, "test"))
		_, err := Read("t.conf", []byte("a b;\nc 'd\ne';"), Options{Budget: b})
		assert.EqualError(t, err, "t.conf:2: "+WordsWhat+": over the node budget of one run, 1,048,576 nodes in all")
		assert.ErrorIs(t, err, budget.ErrSpent)
	})
}

// FuzzRead reads random configs that include themselves: no panic, and an
// error or a directive is at a line of its input.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"http { server { location / { proxy_pass http://u; } } }",
		"log_format x '$a \\' \"b\"' ${c}d;\n# e\n",
		"include t.conf; include *.conf;",
		"a 'b", "a {", "}", "a \"b\"c;", "a\\\nb;",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, openEnd bool) {
		lines := 1 + strings.Count(string(data), "\n")
		o := Options{
			OpenEnd: openEnd,
			Include: func(_, file string) ([]byte, error) { return data, nil },
			List:    func(string) ([]Entry, error) { return []Entry{{Name: "t.conf"}}, nil },
		}
		ds, err := Read("t.conf", data, o)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			if e.Line < 1 || e.Line > lines || e.QuoteLine < 0 || e.QuoteLine > e.Line {
				t.Fatalf("error at line %d (quote %d) of %d: %v", e.Line, e.QuoteLine, lines, err)
			}
			if e.File == "" || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q", err)
			}
			return
		}
		err = Walk(ds, func(d *Directive) error {
			if d.Line < 1 || d.Line > lines {
				return fmt.Errorf("%s at line %d of %d", d.Name, d.Line, lines)
			}
			for _, a := range d.Args {
				if a.Line < d.Line || a.Line > lines {
					return fmt.Errorf("%s: %q at line %d of %d", d.Name, a.Value, a.Line, lines)
				}
			}
			if !strings.Contains(string(data), d.Name) && !strings.ContainsAny(string(data), "\\\"'") {
				return fmt.Errorf("%q is not in the input", d.Name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestReadIncludeGlobDirs: a glob in any element, as glob(3) reads it: an
// inner element matches directories only, not hidden ones.
func TestReadIncludeGlobDirs(t *testing.T) {
	files := mapFS{
		"/n/sites/b/conf/x.conf":     "b;\n",
		"/n/sites/a/conf/x.conf":     "a;\n",
		"/n/sites/a/conf/y.conf":     "a2;\n",
		"/n/sites/.old/conf/x.conf":  "old;\n",
		"/n/sites/c/other/x.conf":    "other;\n",
		"/n/sites/notadir":           "file;\n",
		"/n/sites/b/conf/sub/z.conf": "deeper;\n",
	}
	ds, err := Read("/n/nginx.conf", []byte("include sites/*/conf/*.conf;"), files.options())
	require.NoError(t, err)
	assert.Equal(t, []string{`/n/sites/a/conf/x.conf:1 "a"`, `/n/sites/a/conf/y.conf:1 "a2"`, `/n/sites/b/conf/x.conf:1 "b"`}, flat(ds))

	ds, err = Read("/n/nginx.conf", []byte("include s?tes/[ab]/*/x.conf;"), files.options())
	require.NoError(t, err)
	assert.Equal(t, []string{`/n/sites/a/conf/x.conf:1 "a"`, `/n/sites/b/conf/x.conf:1 "b"`}, flat(ds))

	ds, err = Read("/n/nginx.conf", []byte("include nowhere/*/x.conf;"), files.options())
	require.NoError(t, err)
	assert.Empty(t, ds)
}
