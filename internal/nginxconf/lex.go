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
func (lx *lexer) next() ([]Word, int, error) {
	var words []Word
	needSpace, lastSpace, sharpComment, variable, quoted := false, true, false, false, false
	sQuoted, dQuoted := false, false
	start, startLine := lx.i, lx.line
	word := func(end int) error {
		if err := lx.budget.Nodes(1, WordsWhat); err != nil {
			return &Error{Kind: KindBudget, File: lx.file, Line: startLine, Err: err}
		}
		words = append(words, Word{Value: unescape(lx.data[start:end]), Line: startLine})
		return nil
	}
	for {
		if lx.i >= len(lx.data) {
			if sQuoted || dQuoted {
				e := lx.errorAt(KindEOF)
				e.QuoteLine = startLine
				return nil, 0, e
			}
			if len(words) == 0 && lastSpace {
				return nil, fileDone, nil
			}
			if !lx.openEnd {
				return nil, 0, lx.errorAt(KindEOF)
			}
			if !lastSpace && !needSpace { // a bare word the input ends
				if err := word(len(lx.data)); err != nil {
					return nil, 0, err
				}
			}
			return words, end, nil
		}
		ch := lx.data[lx.i]
		lx.i++
		if ch == '\n' {
			lx.line++
			sharpComment = false
		}
		if sharpComment {
			continue
		}
		if quoted {
			quoted = false
			continue
		}
		if needSpace {
			if isSpace(ch) {
				lastSpace, needSpace = true, false
				continue
			}
			switch ch {
			case ';':
				return words, end, nil
			case '{':
				return words, blockStart, nil
			case ')':
				lastSpace, needSpace = true, false
			default:
				e := lx.errorAt(KindUnexpected)
				e.Char = ch
				return nil, 0, e
			}
		}
		if lastSpace {
			start, startLine = lx.i-1, lx.line
			if isSpace(ch) {
				continue
			}
			switch ch {
			case ';', '{':
				if len(words) == 0 {
					e := lx.errorAt(KindUnexpected)
					e.Char = ch
					return nil, 0, e
				}
				if ch == '{' {
					return words, blockStart, nil
				}
				return words, end, nil
			case '}':
				if len(words) != 0 {
					e := lx.errorAt(KindUnexpected)
					e.Char = ch
					return nil, 0, e
				}
				return nil, blockDone, nil
			case '#':
				sharpComment = true
				continue
			case '\\':
				quoted, lastSpace = true, false
				continue
			case '"':
				start++
				dQuoted, lastSpace = true, false
				continue
			case '\'':
				start++
				sQuoted, lastSpace = true, false
				continue
			case '$':
				variable, lastSpace = true, false
				continue
			default:
				lastSpace = false
			}
			continue
		}
		if ch == '{' && variable {
			continue
		}
		variable = false
		if ch == '\\' {
			quoted = true
			continue
		}
		if ch == '$' {
			variable = true
			continue
		}
		found := false
		switch {
		case dQuoted:
			if ch == '"' {
				dQuoted, needSpace, found = false, true, true
			}
		case sQuoted:
			if ch == '\'' {
				sQuoted, needSpace, found = false, true, true
			}
		case isSpace(ch) || ch == ';' || ch == '{':
			lastSpace, found = true, true
		}
		if !found {
			continue
		}
		if err := word(lx.i - 1); err != nil {
			return nil, 0, err
		}
		switch ch {
		case ';':
			return words, end, nil
		case '{':
			return words, blockStart, nil
		}
	}
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
