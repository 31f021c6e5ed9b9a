package ingest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Reading log_format directives from an nginx configuration.
//
// The tokenizer follows ngx_conf_read_token: words are separated by
// whitespace, ";" ends a directive, "{" opens a block and "}" closes one;
// "#" at the start of a word comments out the rest of the line; a word may
// be quoted with " or ', and in quoted and bare words alike \" \' \\ \t \r
// \n are escapes. A "{" right after "$" belongs to a ${variable}. The
// reader does not check which directive is allowed where: it only collects
// log_format directives, in any block, and follows include directives.

// nginxStmt is one directive: its words, and whether it opens a block.
type nginxStmt struct {
	words []string
	block bool
	line  int
}

// maxNginxIncludeDepth bounds nested includes, so that a file including itself
// ends with an error rather than never.
const maxNginxIncludeDepth = 16

// maxNginxConfFile caps one config file; the budget of the run
// (internal/budget, the one check reads configs within) caps all of them
// with their includes, bytes and words: real configs are kilobytes, and an
// include of /dev/zero, of a huge file, or of one file many times must not
// take the machine.
const maxNginxConfFile = 4 << 20

// tokenizeNginxConf splits a config into directives. A directive cut short
// by the end of the input (no ";") is returned too, for --log-format values
// pasted without it.
func tokenizeNginxConf(data []byte, file string) ([]nginxStmt, error) {
	return tokenizeNginxConfWithin(budget.New(), data, file)
}

// tokenizeNginxConfWithin is tokenizeNginxConf taking each word from b.
func tokenizeNginxConfWithin(b *budget.Budget, data []byte, file string) ([]nginxStmt, error) {
	var out []nginxStmt
	var cur nginxStmt
	line := 1
	flush := func(block bool) {
		if len(cur.words) > 0 {
			cur.block = block
			out = append(out, cur)
		}
		cur = nginxStmt{}
	}
	for i := 0; i < len(data); {
		c := data[i]
		switch c {
		case '\n':
			line++
			i++
			continue
		case ' ', '\t', '\r':
			i++
			continue
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		case ';':
			flush(false)
			i++
			continue
		case '{':
			flush(true)
			i++
			continue
		case '}':
			flush(false)
			i++
			continue
		}
		if len(cur.words) == 0 {
			cur.line = line
		}
		startLine := line
		var word []byte
		if c == '"' || c == '\'' {
			i++
			closed := false
			for i < len(data) {
				switch data[i] {
				case '\\':
					if i+1 < len(data) {
						if data[i+1] == '\n' {
							line++
						}
						word = appendNginxEscape(word, data[i+1])
						i += 2
						continue
					}
				case c:
					closed = true
				case '\n':
					line++
				}
				if closed {
					i++
					break
				}
				word = append(word, data[i])
				i++
			}
			if !closed {
				return nil, fmt.Errorf("%s:%d: the quoted string that starts here is not closed", file, startLine)
			}
		} else {
			variable := false
			for i < len(data) {
				b := data[i]
				if b == '{' && variable {
					word = append(word, b)
					i++
					variable = false
					continue
				}
				variable = b == '$'
				if b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == ';' || b == '{' {
					break
				}
				if b == '\\' && i+1 < len(data) {
					word = appendNginxEscape(word, data[i+1])
					i += 2
					continue
				}
				word = append(word, b)
				i++
			}
		}
		if err := b.Nodes(1, "nginx words (every file and include of the config)"); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, startLine, err)
		}
		cur.words = append(cur.words, string(word))
	}
	flush(false)
	return out, nil
}

// appendEscape appends what nginx reads for a backslash followed by c.
func appendNginxEscape(word []byte, c byte) []byte {
	switch c {
	case '"', '\'', '\\':
		return append(word, c)
	case 't':
		return append(word, '\t')
	case 'r':
		return append(word, '\r')
	case 'n':
		return append(word, '\n')
	}
	return append(word, '\\', c)
}

// nginxConfFormat is a log_format directive found in a config.
type nginxConfFormat struct {
	name string
	nf   nginxFormat
}

// nginxConfReader collects the log_format directives of a config and the files
// it includes.
type nginxConfReader struct {
	dir     string         // the main config's directory: nginx resolves includes against it
	budget  *budget.Budget // what is left to read, bytes and words, of every file
	formats []nginxConfFormat
	missing []string // includes of one file that does not exist
}

// readNginxConf returns the log_format named name in the nginx config at
// path, following include directives (relative paths are taken from the
// directory of path, as nginx does with its config prefix; globs are
// expanded in sorted order). An empty name picks the only log_format of the
// config; "combined" is nginx's predefined format unless the config defines
// it. The error for a missing name lists the formats found, and the includes
// that could not be read.
func readNginxConf(path, name string) (nginxFormat, error) {
	r := &nginxConfReader{dir: filepath.Dir(path), budget: budget.New()}
	if err := r.read(path, "", 0); err != nil {
		return nginxFormat{}, err
	}
	if name == "" {
		if len(r.formats) == 1 {
			return r.formats[0].nf, nil
		}
		if len(r.formats) == 0 {
			return nginxFormat{}, fmt.Errorf("%s defines no log_format%s", path, r.missingNote())
		}
		return nginxFormat{}, fmt.Errorf("%s defines several log formats (%s): choose one with --log-format-name", path, r.names())
	}
	for _, f := range r.formats {
		if f.name == name {
			return f.nf, nil
		}
	}
	if name == "combined" {
		return nginxFormat{text: nginxCombined, escape: "default", origin: combinedOrigin}, nil
	}
	found := "it defines none"
	if len(r.formats) > 0 {
		found = "it defines " + r.names()
	}
	return nginxFormat{}, fmt.Errorf("%s has no log_format %q: %s%s", path, name, found, r.missingNote())
}

func (r *nginxConfReader) names() string {
	var ns []string
	for _, f := range r.formats {
		ns = append(ns, fmt.Sprintf("%q", f.name))
	}
	return strings.Join(ns, ", ")
}

func (r *nginxConfReader) missingNote() string {
	if len(r.missing) == 0 {
		return ""
	}
	return fmt.Sprintf(" (these includes could not be read: %s)", strings.Join(r.missing, ", "))
}

// read reads one config file and the files it includes. from is where
// it is included ("nginx.conf:12"), "" for the main config.
func (r *nginxConfReader) read(file, from string, depth int) error {
	if depth > maxNginxIncludeDepth {
		return fmt.Errorf("%s: includes nested deeper than %d (does a file include itself?)", file, maxNginxIncludeDepth)
	}
	data, err := r.readFile(file, from)
	if err != nil {
		if from != "" && os.IsNotExist(err) {
			r.missing = append(r.missing, file)
			return nil
		}
		return err
	}
	stmts, err := tokenizeNginxConfWithin(r.budget, data, file)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		if st.block {
			continue
		}
		switch st.words[0] {
		case "log_format":
			if len(st.words) < 3 {
				return fmt.Errorf("%s:%d: log_format needs a name and a format", file, st.line)
			}
			nf, err := logFormatArgs(st.words[2:])
			if err != nil {
				return fmt.Errorf("%s:%d: %w", file, st.line, err)
			}
			name := st.words[1]
			nf.origin = fmt.Sprintf("log_format %q at %s:%d", name, file, st.line)
			if !slices.ContainsFunc(r.formats, func(f nginxConfFormat) bool { return f.name == name }) {
				r.formats = append(r.formats, nginxConfFormat{name: name, nf: nf})
			}
		case "include":
			if len(st.words) != 2 {
				return fmt.Errorf("%s:%d: include needs one file name", file, st.line)
			}
			pattern := st.words[1]
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(r.dir, pattern)
			}
			from := fmt.Sprintf("%s:%d", file, st.line)
			if !strings.ContainsAny(pattern, "*?[") {
				if err := r.read(pattern, from, depth+1); err != nil {
					return err
				}
				continue
			}
			matches, err := filepath.Glob(pattern)
			if err != nil {
				return fmt.Errorf("%s:%d: include %s: %w", file, st.line, st.words[1], err)
			}
			for _, m := range matches { // sorted by filepath.Glob
				if err := r.read(m, from, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readFile reads one config file within the caps. An include must name a
// regular file (not a device, a pipe or a directory); the main config may
// also be a pipe (--nginx-conf <(kubectl exec ... cat nginx.conf)).
func (r *nginxConfReader) readFile(file, from string) ([]byte, error) {
	where := ""
	if from != "" {
		where = from + ": include "
	}
	if from != "" {
		// Before opening: opening a named pipe waits for a writer.
		if st, err := os.Stat(file); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
			return nil, fmt.Errorf("%s%s: not a regular file (%s); an include is read only from a regular file", where, file, fileKind(st.Mode()))
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case st.IsDir():
		return nil, fmt.Errorf("%s%s: is a directory, not a config file", where, file)
	case from != "" && !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s%s: not a regular file (%s); an include is read only from a regular file", where, file, fileKind(st.Mode()))
	}
	limit := min(int64(maxNginxConfFile), r.budget.BytesLeft())
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit && limit == maxNginxConfFile {
		return nil, fmt.Errorf("%s%s: larger than %s, the cap of one config file", where, file, human.Bytes(maxNginxConfFile))
	}
	if err := r.budget.Bytes(int64(len(data)), "the config and its includes"); err != nil {
		return nil, fmt.Errorf("%s%s: %w", where, file, err)
	}
	return data, nil
}

// fileKind names a file mode that is not a regular file's.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
