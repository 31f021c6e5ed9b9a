// Package nginxconf reads nginx configuration as nginx reads it: the one
// tokenizer of the tool (ngx_conf_read_token's state machine, in
// src/core/ngx_conf_file.c) and the include directive (ngx_conf_include:
// relative paths from the conf prefix, globs expanded in sorted order).
// `analyze --nginx-conf` reads log_format directives with it and `check`
// reads proxy settings with it; what each does with the directives, and
// how it words an error, is its own.
//
// The grammar: words are separated by spaces, tabs, CR and LF; ";" ends a
// directive and "{" opens a block, both only outside quotes; "}" closes a
// block only where a word could start; "#" starts a comment only where a
// word could start; a word that starts with " or ' runs to the matching
// quote and must be followed by a space, ";", "{" or ")"; a backslash
// takes the next character into the word, and \" \' \\ \t \r \n are read
// as the character, tab, CR and LF (any other backslash stays); "{" right
// after "$" belongs to a variable ("${name}").
//
// A read is bounded: every word is taken from the run's budget
// (internal/budget), includes nest at most MaxIncludeDepth deep and open
// at most MaxFiles files in all, and each included file is read by the
// caller's Include, which bounds its bytes.
package nginxconf

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/budget"
)

// The include limits of one read.
const (
	// MaxIncludeDepth bounds nested includes: nginx itself has no limit,
	// and an include loop would recurse until it runs out of file
	// descriptors.
	MaxIncludeDepth = 16
	// MaxFiles bounds the files one read parses, the main file among them.
	MaxFiles = 512
)

// WordsWhat names the words of a config in the budget's error.
const WordsWhat = "nginx words (every file and include of the config)"

// Word is one word of a directive, quotes removed and escapes applied as
// nginx applies them, and the line it starts on.
type Word struct {
	Value string
	Line  int
}

// Directive is one directive: its name, its arguments, where it is, and
// its block for a block directive ("http {...}").
type Directive struct {
	Name    string
	Args    []Word
	File    string
	Line    int
	IsBlock bool
	Block   []*Directive
}

// Arg is the value of argument i, "" when the directive has fewer.
func (d *Directive) Arg(i int) string {
	if i < len(d.Args) {
		return d.Args[i].Value
	}
	return ""
}

// Entry is one name in a directory, for globs.
type Entry struct {
	Name string
	Dir  bool // a directory: only these match a glob's inner elements
}

// Options say how a read follows includes and ends.
type Options struct {
	// Budget is the run's; nil is a full one.
	Budget *budget.Budget
	// Include reads a file an include names: name as written in the
	// directive, file the path made of it (relative names from the
	// directory of the main file, nginx's conf prefix). It bounds what it
	// reads. nil: an include is an error (KindNoOpener), unless
	// KeepIncludes.
	Include func(name, file string) ([]byte, error)
	// List gives the names in a directory for a glob; an error that is
	// fs.ErrNotExist matches nothing, as in nginx.
	List func(dir string) ([]Entry, error)
	// Missing, when set, is told of an include (no glob) whose file does
	// not exist, and the read goes on without it; otherwise it is an error.
	Missing func(file string)
	// KeepIncludes keeps include directives as directives, unread.
	KeepIncludes bool
	// OpenEnd lets the end of the input end the last directive, for a
	// directive pasted without its ";" (--log-format).
	OpenEnd bool
}

// Kind is what an Error is about.
type Kind int

const (
	// KindUnexpected: a character where nginx refuses it (Char).
	KindUnexpected Kind = iota
	// KindEOF: the input ends inside a directive; QuoteLine is where a
	// quoted word that is still open started, 0 if none.
	KindEOF
	// KindUnclosedBlock: the input ends inside a block.
	KindUnclosedBlock
	// KindBudget: the run's budget is spent (Err).
	KindBudget
	// KindIncludeArgs: an include without exactly one argument.
	KindIncludeArgs
	// KindIncludeDepth: includes nested deeper than MaxIncludeDepth; File
	// is the first file the include would read (Path).
	KindIncludeDepth
	// KindIncludeFiles: more than MaxFiles files.
	KindIncludeFiles
	// KindNoOpener: an include with no Include to read it.
	KindNoOpener
	// KindGlob: a pattern that does not parse (Err).
	KindGlob
	// KindList: a directory of a glob that could not be listed (Dir, Err).
	KindList
	// KindRead: Include refused a file (Path, Err).
	KindRead
)

// Error is a config that cannot be read: where (the include directive for
// the include kinds), what, and the values a message names.
type Error struct {
	Kind      Kind
	File      string // where: the file and line
	Line      int
	Char      byte   // KindUnexpected
	QuoteLine int    // KindEOF in a quoted word
	Include   string // the include's argument as written
	Path      string // the file an include reads (KindIncludeDepth, KindRead)
	Dir       string // the directory a glob lists (KindList)
	Err       error
}

// Error says it as nginx says it where nginx does (unexpected "}"), with
// the file and line in front.
func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message()) }

// Unwrap is the cause: the budget's error, or the opener's.
func (e *Error) Unwrap() error { return e.Err }

// Message is the error without its position.
func (e *Error) Message() string {
	switch e.Kind {
	case KindUnexpected:
		return fmt.Sprintf("unexpected %q", string(e.Char))
	case KindEOF:
		return `unexpected end of file, expecting ";" or "}"`
	case KindUnclosedBlock:
		return `unexpected end of file, expecting "}"`
	case KindIncludeArgs:
		return `invalid number of arguments in "include" directive`
	case KindIncludeDepth:
		return fmt.Sprintf("include %q: includes nested more than %d deep (an include loop?)", e.Include, MaxIncludeDepth)
	case KindIncludeFiles:
		return fmt.Sprintf("include %q: more than %d files in all", e.Include, MaxFiles)
	case KindNoOpener:
		return fmt.Sprintf("include %q: no way to open included files", e.Include)
	case KindList:
		return fmt.Sprintf("include %q: cannot list %s: %v", e.Include, e.Dir, e.Err)
	case KindGlob, KindRead:
		return fmt.Sprintf("include %q: %v", e.Include, e.Err)
	}
	return e.Err.Error() // KindBudget
}

// Read parses the config file holds, includes read in place: an included
// file's directives take the place of its include directive (an included
// file is parsed at the top of its own nesting: it cannot close a block of
// the file that includes it).
func Read(file string, data []byte, o Options) ([]*Directive, error) {
	if o.Budget == nil {
		o.Budget = budget.New()
	}
	r := &reader{o: o, prefix: filepath.Dir(file)}
	return r.parseFile(file, data, 0)
}

type reader struct {
	o      Options
	prefix string // nginx's conf prefix: the directory of the main file
	files  int
}

func (r *reader) parseFile(file string, data []byte, depth int) ([]*Directive, error) {
	r.files++
	lx := &lexer{file: file, data: data, line: 1, budget: r.o.Budget, openEnd: r.o.OpenEnd}
	return r.parseBlock(lx, false, depth)
}

func (r *reader) parseBlock(lx *lexer, inBlock bool, depth int) ([]*Directive, error) {
	var out []*Directive
	for {
		words, end, err := lx.next()
		if err != nil {
			return nil, err
		}
		switch end {
		case fileDone:
			if inBlock {
				return nil, lx.errorAt(KindUnclosedBlock)
			}
			return out, nil
		case blockDone:
			if !inBlock {
				e := lx.errorAt(KindUnexpected)
				e.Char = '}'
				return nil, e
			}
			return out, nil
		}
		d := &Directive{Name: words[0].Value, Args: words[1:], File: lx.file, Line: words[0].Line}
		if end == blockStart {
			d.IsBlock = true
			if d.Block, err = r.parseBlock(lx, true, depth); err != nil {
				return nil, err
			}
			out = append(out, d)
			continue
		}
		if d.Name == "include" && !r.o.KeepIncludes {
			inc, err := r.include(d, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, inc...)
			continue
		}
		out = append(out, d)
	}
}

// include reads the files of an include directive, in the order nginx
// reads them (a glob's matches sorted, as glob(3) returns them).
func (r *reader) include(d *Directive, depth int) ([]*Directive, error) {
	errorOf := func(k Kind) *Error {
		e := &Error{Kind: k, File: d.File, Line: d.Line}
		if len(d.Args) > 0 {
			e.Include = d.Args[0].Value
		}
		return e
	}
	if len(d.Args) != 1 {
		return nil, errorOf(KindIncludeArgs)
	}
	if r.o.Include == nil {
		return nil, errorOf(KindNoOpener)
	}
	name := d.Args[0].Value
	full := name
	if !filepath.IsAbs(full) {
		full = filepath.Join(r.prefix, full)
	}
	files := []string{full}
	glob := hasMeta(name)
	if glob {
		var ge *Error
		if files, ge = r.glob(full, false); ge != nil {
			ge.File, ge.Line, ge.Include = d.File, d.Line, name
			return nil, ge
		}
	}
	if len(files) > 0 && depth+1 > MaxIncludeDepth {
		e := errorOf(KindIncludeDepth)
		e.Path = files[0]
		return nil, e
	}
	var out []*Directive
	for _, f := range files {
		if r.files >= MaxFiles {
			return nil, errorOf(KindIncludeFiles)
		}
		data, err := r.o.Include(name, f)
		if err != nil {
			if !glob && r.o.Missing != nil && errors.Is(err, fs.ErrNotExist) {
				r.o.Missing(f)
				continue
			}
			e := errorOf(KindRead)
			e.Path, e.Err = f, err
			return nil, e
		}
		ds, err := r.parseFile(f, data, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
	}
	return out, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

// glob returns the paths pattern matches, sorted, as glob(3) without
// flags: every element may hold a pattern, an inner one matching
// directories only; "*", "?" and "[" do not match a leading dot. A
// directory that does not exist matches nothing. dirs keeps directories
// only.
func (r *reader) glob(pattern string, dirs bool) ([]string, *Error) {
	dir, elem := filepath.Split(pattern)
	if _, err := path.Match(elem, ""); err != nil {
		return nil, &Error{Kind: KindGlob, Err: err}
	}
	parents := []string{dir}
	if hasMeta(dir) {
		ds, err := r.glob(strings.TrimSuffix(dir, string(filepath.Separator)), true)
		if err != nil {
			return nil, err
		}
		parents = ds
	}
	if r.o.List == nil {
		return nil, &Error{Kind: KindList, Dir: dir, Err: errors.New("no way to list directories")}
	}
	var files []string
	for _, p := range parents {
		list := p
		if list == "" {
			list = "."
		}
		entries, err := r.o.List(filepath.Clean(list))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &Error{Kind: KindList, Dir: list, Err: err}
		}
		for _, e := range entries {
			if e.Name == "" || dirs && !e.Dir || strings.HasPrefix(e.Name, ".") && !strings.HasPrefix(elem, ".") {
				continue
			}
			if ok, _ := path.Match(elem, e.Name); ok {
				files = append(files, filepath.Join(p, e.Name))
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// Walk calls f for every directive, blocks' directives after their block
// directive, in the order of the config.
func Walk(ds []*Directive, f func(*Directive) error) error {
	for _, d := range ds {
		if err := f(d); err != nil {
			return err
		}
		if err := Walk(d.Block, f); err != nil {
			return err
		}
	}
	return nil
}
