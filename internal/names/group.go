package names

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Missing stands in a group's name for a value the record does not have.
const Missing = "-"

// A group's name is its values in the order of --by, joined by spaces. So
// that a name stands for one list of values, and two different lists never
// make one name (one group, their calls added up), a value that could be
// read as two values or as a missing one is quoted with Go's escapes:
// {route="x y",method="z"} is `"x y" z` and {route="x",method="y z"}
// `x "y z"`; a value "-" is `"-"` and a missing value `-`. Every source
// names its groups by this rule (promsource.GroupName, ingest's --by).

// NeedsQuote reports whether the group value v is quoted in a group's
// name: it is "-", or holds a space (Unicode's) or a double quote. Every
// log line's group value is checked (ingest's Grouper): eight bytes are
// looked at a time, and a word with no byte below '#' and none above
// 0x7f (the common case: a route) is passed at once.
func NeedsQuote[T ~string | ~[]byte](v T) bool {
	if string(v) == Missing {
		return true
	}
	// plain reports whether the eight bytes from j have none below 0x23
	// ('#': the space, '"' and the ASCII spaces are) and none with the
	// high bit set: such a byte sets the high bit of its byte of
	// w-0x23..23 or of w (a borrow into the next byte only sends the
	// word to the bytewise look below, which is exact).
	plain := func(j int) bool {
		w := uint64(v[j]) | uint64(v[j+1])<<8 | uint64(v[j+2])<<16 | uint64(v[j+3])<<24 |
			uint64(v[j+4])<<32 | uint64(v[j+5])<<40 | uint64(v[j+6])<<48 | uint64(v[j+7])<<56
		return ((w-0x2323232323232323)|w)&0x8080808080808080 == 0
	}
	i := 0
	for ; i+8 <= len(v) && plain(i); i += 8 {
	}
	if i < len(v) && i+8 > len(v) && len(v) >= 8 && plain(len(v)-8) {
		return false // the last eight bytes, overlapping the words before
	}
	for i < len(v) {
		c := v[i]
		if c < utf8.RuneSelf {
			if c == '"' || c == ' ' || (c >= '\t' && c <= '\r') {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(string(v[i:min(len(v), i+utf8.UTFMax)]))
		if unicode.IsSpace(r) {
			return true
		}
		i += n
	}
	return false
}

// Value is the group value v as a group's name writes it: "-" when v is
// empty (missing), quoted when NeedsQuote, else v itself.
func Value(v string) string {
	switch {
	case v == "":
		return Missing
	case NeedsQuote(v):
		return strconv.Quote(v)
	}
	return v
}

// FinishValue rewrites the value a caller has appended to b from start on
// as Value would write it, and returns b: the common case (a plain value)
// neither copies nor allocates.
func FinishValue(b []byte, start int) []byte {
	switch v := b[start:]; {
	case len(v) == 0:
		return append(b, Missing...)
	case NeedsQuote(v):
		return strconv.AppendQuote(b[:start], string(v))
	}
	return b
}

// Split reads the values back out of a group's name written by the rule
// above (promsource.GroupName, ingest's --by): words split at single
// spaces, a quoted one unquoted, Missing ("-") a missing value (""). It is
// the inverse of joining Value of each value with spaces; a name that rule
// cannot have written (two spaces in a row, a quoted value with more after
// its closing quote, a quote never closed) is an error.
func Split(name string) ([]string, error) {
	var out []string
	for rest := name; rest != ""; {
		if rest[0] == '"' {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, err
			}
			v, _ := strconv.Unquote(q)
			out = append(out, v)
			rest = rest[len(q):]
		} else {
			w, _, _ := strings.Cut(rest, " ")
			rest = rest[len(w):]
			switch w {
			case "":
				return nil, fmt.Errorf("two spaces in a row")
			case "-":
				w = ""
			}
			out = append(out, w)
		}
		if rest != "" {
			if rest[0] != ' ' {
				return nil, fmt.Errorf("a value runs on after its quote")
			}
			rest = rest[1:]
		}
	}
	return out, nil
}
