package nginxconf

import (
	"bytes"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/budget"
)

// lexer reads the directives of one file, each word taken from the run's
// node budget.
type lexer struct {
	file    string
	data    []byte
	i       int
	line    int
	budget  *budget.Budget
	openEnd bool
}

// What ends a directive, as ngx_conf_read_token returns it.
const (
	end        = iota // ";"
	blockStart        // "{"
	blockDone         // "}"
	fileDone          // the end of the file
)

func (lx *lexer) errorAt(k Kind) *Error { return &Error{Kind: k, File: lx.file, Line: lx.line} }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// next reads the words of one directive and what ends it, as
// ngx_conf_read_token: a word ends at a space, ";" or "{"; "#" starts a
// comment only where a word could start; a quoted word must be followed
// by a space, ";", "{" or ")"; "{" right after "$" is part of a variable
// ("${name}", and nginx keeps reading it so: "${{" is one word), and "}"
// is special only where a word could start.
//
// The loop is ngx_conf_read_token's: the end of the input, then a
// character's line, comment and backslash, then the state it is read in:
// after a closing quote (need_space), where a word could start
// (last_space), or inside a word.
func (lx *lexer) next() ([]Word, int, error) {
	t := &token{lx: lx, lastSpace: true, start: lx.i, startLine: lx.line}
	for {
		if lx.i >= len(lx.data) {
			t.endOfFile()
			return t.result()
		}
		ch := lx.data[lx.i]
		lx.i++
		if ch == '\n' {
			lx.line++
			t.sharpComment = false
		}
		if t.sharpComment {
			continue
		}
		if t.quoted {
			t.quoted = false
			continue
		}
		if t.needSpace {
			switch t.afterQuote(ch) {
			case done:
				return t.result()
			case taken:
				continue
			}
		}
		var st step
		if t.lastSpace {
			st = t.wordStart(ch)
		} else {
			st = t.inWord(ch)
		}
		if st == done {
			return t.result()
		}
	}
}

// token is the state of one directive's read: ngx_conf_read_token's
// locals, and what ends the directive once it ends.
type token struct {
	lx    *lexer
	words []Word
	// need_space, last_space, sharp_comment, variable, quoted, s_quoted
	// and d_quoted of ngx_conf_read_token.
	needSpace, lastSpace, sharpComment, variable, quoted bool
	sQuoted, dQuoted                                     bool
	start, startLine                                     int // where the word read starts
	end                                                  int // end, blockStart, blockDone or fileDone
	err                                                  error
}

// step is what a state did with a character.
type step int

const (
	taken  step = iota // the character is read: on to the next
	passed             // for the next state (need_space's ")", which starts a word)
	done               // the directive ends (or the read fails): token.result
)

func (t *token) result() ([]Word, int, error) {
	if t.err != nil {
		return nil, 0, t.err
	}
	return t.words, t.end, nil
}

// finish ends the directive with end.
func (t *token) finish(end int) step {
	t.end = end
	return done
}

// fail ends the read with err.
func (t *token) fail(err error) step {
	t.err = err
	return done
}

// unexpected fails on a character nginx refuses where it is.
func (t *token) unexpected(ch byte) step {
	e := t.lx.errorAt(KindUnexpected)
	e.Char = ch
	return t.fail(e)
}

// word takes the word from start to end, from the run's budget.
func (t *token) word(end int) error {
	if err := t.lx.budget.Nodes(1, WordsWhat); err != nil {
		return &Error{Kind: KindBudget, File: t.lx.file, Line: t.startLine, Err: err}
	}
	t.words = append(t.words, Word{Value: unescape(t.lx.data[t.start:end]), Line: t.startLine})
	return nil
}

// endOfFile is the end of the input: inside a quote an error, where no
// directive started the end of the file; else an error, unless the input
// may end the last directive (OpenEnd), which then takes a bare word it
// ends.
func (t *token) endOfFile() {
	switch {
	case t.sQuoted || t.dQuoted:
		e := t.lx.errorAt(KindEOF)
		e.QuoteLine = t.startLine
		t.fail(e)
	case len(t.words) == 0 && t.lastSpace:
		t.finish(fileDone)
	case !t.lx.openEnd:
		t.fail(t.lx.errorAt(KindEOF))
	case !t.lastSpace && !t.needSpace: // a bare word the input ends
		if err := t.word(len(t.lx.data)); err != nil {
			t.fail(err)
			return
		}
		t.finish(end)
	default:
		t.finish(end)
	}
}

// afterQuote reads the character after a closing quote (need_space): a
// space, ";", "{" or ")", which starts the next word.
func (t *token) afterQuote(ch byte) step {
	if isSpace(ch) {
		t.lastSpace, t.needSpace = true, false
		return taken
	}
	switch ch {
	case ';':
		return t.finish(end)
	case '{':
		return t.finish(blockStart)
	case ')':
		t.lastSpace, t.needSpace = true, false
		return passed
	}
	return t.unexpected(ch)
}

// wordStart reads a character where a word could start (last_space):
// spaces are skipped, ";" "{" and "}" end the directive, "#" starts a
// comment, and anything else starts a word, a quote a quoted one.
func (t *token) wordStart(ch byte) step {
	t.start, t.startLine = t.lx.i-1, t.lx.line
	if isSpace(ch) {
		return taken
	}
	switch ch {
	case ';', '{':
		if len(t.words) == 0 {
			return t.unexpected(ch)
		}
		if ch == '{' {
			return t.finish(blockStart)
		}
		return t.finish(end)
	case '}':
		if len(t.words) != 0 {
			return t.unexpected(ch)
		}
		return t.finish(blockDone)
	case '#':
		t.sharpComment = true
		return taken
	case '\\':
		t.quoted = true
	case '"':
		t.start++
		t.dQuoted = true
	case '\'':
		t.start++
		t.sQuoted = true
	case '$':
		t.variable = true
	}
	t.lastSpace = false
	return taken
}

// inWord reads a character inside a word: the word ends at its closing
// quote, or unquoted at a space, ";" or "{" (not a "{" right after "$").
func (t *token) inWord(ch byte) step {
	if ch == '{' && t.variable {
		return taken
	}
	t.variable = false
	switch ch {
	case '\\':
		t.quoted = true
		return taken
	case '$':
		t.variable = true
		return taken
	}
	switch {
	case t.dQuoted:
		if ch != '"' {
			return taken
		}
		t.dQuoted, t.needSpace = false, true
	case t.sQuoted:
		if ch != '\'' {
			return taken
		}
		t.sQuoted, t.needSpace = false, true
	case isSpace(ch) || ch == ';' || ch == '{':
		t.lastSpace = true
	default:
		return taken
	}
	if err := t.word(t.lx.i - 1); err != nil {
		return t.fail(err)
	}
	switch ch {
	case ';':
		return t.finish(end)
	case '{':
		return t.finish(blockStart)
	}
	return taken
}

// unescape applies nginx's escapes: \" \' \\ stand for the character,
// \t \r \n for tab, CR and LF; any other backslash stays.
func unescape(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) {
			switch b[i+1] {
			case '"', '\'', '\\':
				i++
			case 't':
				out.WriteByte('\t')
				i++
				continue
			case 'r':
				out.WriteByte('\r')
				i++
				continue
			case 'n':
				out.WriteByte('\n')
				i++
				continue
			}
		}
		out.WriteByte(b[i])
	}
	return out.String()
}
