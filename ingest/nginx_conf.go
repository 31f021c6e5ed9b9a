package ingest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/nginxconf"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Reading log_format directives from an nginx configuration, read by
// internal/nginxconf as nginx reads it (ngx_conf_read_token, include
// with globs). The reader does not check which directive is allowed
// where: it only collects log_format directives, in any block, and
// follows include directives. An include whose file does not exist is
// left out and named in the error of a format not found.

// maxNginxConfFile caps one config file, as check caps it
// (budget.MaxFileBytes); the budget of the run (internal/budget, the one
// check reads configs within) caps all of them with their includes, bytes
// and words: real configs are kilobytes, and an include of /dev/zero, of
// a huge file, or of one file many times must not take the machine.
const maxNginxConfFile = budget.MaxFileBytes

// nginxConfError says a read error of nginxconf as --nginx-conf says it.
func nginxConfError(err error) error {
	var e *nginxconf.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case nginxconf.KindEOF:
		if e.QuoteLine > 0 {
			return fmt.Errorf("%s:%d: the quoted string that starts here is not closed", e.File, e.QuoteLine)
		}
	case nginxconf.KindIncludeArgs:
		return fmt.Errorf("%s:%d: include needs one file name", e.File, e.Line)
	case nginxconf.KindIncludeDepth:
		return fmt.Errorf("%s: includes nested deeper than %d (does a file include itself?)", e.Path, nginxconf.MaxIncludeDepth)
	case nginxconf.KindGlob:
		return fmt.Errorf("%s:%d: include %s: %w", e.File, e.Line, e.Include, e.Err)
	case nginxconf.KindRead:
		var fe *nginxConfFileError
		if errors.As(e.Err, &fe) {
			return fmt.Errorf("%s:%d: include %w", e.File, e.Line, fe)
		}
		return e.Err
	}
	return e
}

// nginxConfFormat is a log_format directive found in a config.
type nginxConfFormat struct {
	name string
	nf   nginxFormat
}

// nginxConfReader collects the log_format directives of a config and the files
// it includes.
type nginxConfReader struct {
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
	r := &nginxConfReader{budget: budget.New()}
	if err := r.read(path); err != nil {
		return nginxFormat{}, err
	}
	if name == "" {
		if len(r.formats) == 1 {
			return r.formats[0].nf, nil
		}
		if len(r.formats) == 0 {
			return nginxFormat{}, fmt.Errorf("%s defines no log_format%s", path, r.missingNote())
		}
		return nginxFormat{}, usage.About(usage.LogFormatName, fmt.Errorf("%s defines several log formats (%s): choose one with %s", path, r.names(), usage.LogFormatName))
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

// read reads the config file and the files it includes, and collects
// their log_format directives.
func (r *nginxConfReader) read(file string) error {
	data, err := r.readFile(file, false)
	if err != nil {
		return err
	}
	ds, err := nginxconf.Read(file, data, nginxconf.Options{
		Budget:  r.budget,
		Include: func(_, f string) ([]byte, error) { return r.readFile(f, true) },
		List:    listNginxDir,
		Missing: func(f string) { r.missing = append(r.missing, f) },
	})
	if err != nil {
		return nginxConfError(err)
	}
	return nginxconf.Walk(ds, func(d *nginxconf.Directive) error {
		if d.IsBlock || d.Name != "log_format" {
			return nil
		}
		if len(d.Args) < 2 {
			return fmt.Errorf("%s:%d: log_format needs a name and a format", d.File, d.Line)
		}
		nf, err := logFormatArgs(nginxWords(d.Args[1:]))
		if err != nil {
			return fmt.Errorf("%s:%d: %w", d.File, d.Line, err)
		}
		name := d.Args[0].Value
		nf.origin = fmt.Sprintf("log_format %q at %s:%d", name, d.File, d.Line)
		if !slices.ContainsFunc(r.formats, func(f nginxConfFormat) bool { return f.name == name }) {
			r.formats = append(r.formats, nginxConfFormat{name: name, nf: nf})
		}
		return nil
	})
}

// nginxWords are the values of words.
func nginxWords(ws []nginxconf.Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Value
	}
	return out
}

// listNginxDir lists a directory for an include's glob, a directory's
// entries marked (a symbolic link to one too); a directory that cannot be
// read matches nothing, as glob(3) without GLOB_ERR has it in nginx.
func listNginxDir(dir string) ([]nginxconf.Entry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	out := make([]nginxconf.Entry, len(entries))
	for i, e := range entries {
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			st, err := os.Stat(filepath.Join(dir, e.Name()))
			isDir = err == nil && st.IsDir()
		}
		out[i] = nginxconf.Entry{Name: e.Name(), Dir: isDir}
	}
	return out, nil
}

// nginxConfFileError is a config file refused by its kind or size: the
// file and why, which an include's error follows ("nginx.conf:2: include
// /dev/zero: not a regular file ...").
type nginxConfFileError struct {
	msg string
	err error
}

func (e *nginxConfFileError) Error() string { return e.msg }
func (e *nginxConfFileError) Unwrap() error { return e.err }

// openConfig opens a config file: an include as budget.OpenInclude does,
// the main config as it is (it may be a pipe).
func openConfig(file string, include bool) (*os.File, fs.FileInfo, error) {
	if include {
		return budget.OpenInclude(file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// readFile reads one config file within the caps. An include must name a
// regular file (not a device, a pipe or a directory); the main config may
// also be a pipe (--nginx-conf <(kubectl exec ... cat nginx.conf)).
func (r *nginxConfReader) readFile(file string, include bool) ([]byte, error) {
	refuse := func(err error, format string, args ...any) error {
		return &nginxConfFileError{msg: file + ": " + fmt.Sprintf(format, args...), err: err}
	}
	f, st, err := openConfig(file, include)
	if budget.IsNotIncludable(err) {
		return nil, refuse(nil, "%v", err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.IsDir() {
		return nil, refuse(nil, "is a directory, not a config file")
	}
	limit := min(int64(maxNginxConfFile), r.budget.BytesLeft())
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit && limit == maxNginxConfFile {
		return nil, refuse(nil, "larger than %s, the cap of one config file", human.Bytes(maxNginxConfFile))
	}
	if err := r.budget.Bytes(int64(len(data)), "the config and its includes"); err != nil {
		return nil, refuse(err, "%v", err)
	}
	return data, nil
}
