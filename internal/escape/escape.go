// Package escape neutralises the characters of text that came from data
// (group names, routes, label values, bad lines) before it reaches a
// terminal, a document or a configuration file: C0 and C1 control
// characters, DEL, the Unicode bidirectional controls that reorder what a
// reader sees (CVE-2021-42574, "Trojan Source"), line and paragraph
// separators, and bytes that are not UTF-8. A terminal runs ESC and CSI
// sequences (colours, cursor moves, OSC 52 clipboard writes), a newline
// forges a whole report line, and YAML refuses C1 characters outright.
//
// Visible and Lines write each such character as an escape a person can
// read (\x1b, \u009b, \u202e); Quote writes a double-quoted string that
// JSON, YAML, Python and Go all read back as the original; JSON escapes
// the characters encoding/json leaves raw in a document it wrote.
package escape

import (
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r must not reach output raw: a C0 control
// (newline and tab included), DEL, a C1 control, a bidirectional control,
// a line or paragraph separator, a byte-order mark or a noncharacter.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // ALM, LRM, RLM, the embeddings and overrides, the isolates
	case r == 0x2028, r == 0x2029, r == 0xfeff, r == 0xfffe, r == 0xffff:
		return true
	}
	return false
}

// needs reports whether s holds a character Visible would escape; keep
// says which one character may stay ('\n' for Lines, -1 for none).
func needs(s string, keep rune) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (Unsafe(r) && r != keep) || (r == utf8.RuneError && size <= 1) {
			return true
		}
		i += size - 1
	}
	return false
}

// Visible returns s with every unsafe character written as a visible
// escape: \x1b for an ASCII control or a byte that is not UTF-8, \u009b
// for the others. Text without any comes back unchanged, without an
// allocation. A backslash is left as it is: the escapes are for a reader,
// not for a parser (Quote is for parsers).
func Visible(s string) string { return visible(s, -1) }

// Lines is Visible for a whole document: line breaks stay, every other
// unsafe character is escaped. Names inside the document must have gone
// through Visible first, so that a line break in one cannot start a line.
func Lines(s string) string { return visible(s, '\n') }

func visible(s string, keep rune) string {
	if !needs(s, keep) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			writeHex(&b, s[i])
		case r == keep || !Unsafe(r):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			writeHex(&b, byte(r))
		default:
			writeU(&b, r)
		}
		i += size
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

func writeHex(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0xf])
}

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xf])
	}
}

// Quote returns s as a double-quoted string in the syntax JSON, YAML's
// double-quoted scalars, Python and Go share: \" and \\, \n, \r and \t,
// and \uXXXX for every other unsafe character (each is below U+10000). A
// byte that is not UTF-8 cannot be said in JSON or YAML and becomes
// U+FFFD, written \ufffd. Everything else is written as itself, so a route
// in Chinese stays readable.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case Unsafe(r):
			writeU(&b, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// JSON escapes the unsafe characters encoding/json writes raw (DEL, C1 and
// the bidirectional controls; it escapes C0, U+2028 and U+2029 itself) in
// a document it encoded: they only occur inside strings, where \uXXXX
// means the same character, so the document decodes to the same values.
func JSON(doc []byte) []byte {
	s := string(doc)
	if !needs(s, '\n') {
		return doc
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x7f && Unsafe(r) {
			writeU(&b, r)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return []byte(b.String())
}
