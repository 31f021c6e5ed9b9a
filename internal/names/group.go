package names

import (
	"strconv"
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
// name: it is "-", or holds a space (Unicode's) or a double quote.
func NeedsQuote[T ~string | ~[]byte](v T) bool {
	if string(v) == Missing {
		return true
	}
	for i := 0; i < len(v); {
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
