package ingest

// This file is a verbatim copy of jsonl_scan.go as it was before the fast
// path (jsonl_fast.go), its identifiers renamed (jsonlRef...): the
// reference the tests and FuzzJSONLScannerRef hold the scanner to, and the
// "old" side of BenchmarkJSONLScan.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonlRefScanner extracts the values at a few dotted paths from one JSON
// object, validating the whole object on the way, without building it: no
// map per line, no allocation once its buffers have grown.
//
// A path's segments name nested object members: "request.method" is the
// member "method" of the member "request". A member whose own name holds a
// dot matches too ({"request.method": "GET"}). As with encoding/json
// decoding into a map, a repeated member counts once, the last time.
// Values are kept raw (see jsonlRefValue) and strings decoded only when asked
// for (str). Validation follows RFC 8259 as encoding/json.Valid does,
// including its nesting limit of 10,000; like encoding/json it does not
// reject invalid UTF-8.
type jsonlRefScanner struct {
	paths []string
	vals  []jsonlRefValue
	// top[n] are the paths a member name of n bytes (n < len(top)) of the
	// outermost object may match: the paths of n bytes, and those with a
	// '.' after n bytes. A longer name may match any.
	top   [64]uint32
	stack []byte            // closing brackets of the containers being skipped
	offs  []jsonlRefOffsets // per object on the paths' way, how much each path matched
	buf   []byte            // decoded strings; valid until the next scan
}

// jsonlRefOffsets holds how much of each path the enclosing objects matched.
type jsonlRefOffsets [jsonlMaxPaths]uint16

// jsonlRefValue is one extracted value. raw is the literal as written (a
// number, true, an object with its braces), for a string its contents
// between the quotes with escapes undecoded.
type jsonlRefValue struct {
	kind jsonlKind
	raw  []byte
	// plain: a string known to hold no escape (scanned so), whose raw
	// bytes are its contents; false when that is not known.
	plain bool
}

// errRefNotJSONObject is scan's error for a line that is not an object at all.
var errRefNotJSONObject = errors.New("is not a JSON object")

// jsonlRefSyntaxError is scan's error for malformed JSON; off is 0-based.
type jsonlRefSyntaxError struct {
	off int
	msg string
}

func (e *jsonlRefSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off+1, e.msg)
}

func newJSONLRefScanner(paths ...string) *jsonlRefScanner {
	if len(paths) > jsonlMaxPaths {
		panic("ingest: too many JSON paths")
	}
	for _, p := range paths {
		if len(p) > jsonlMaxPathLen {
			panic("ingest: JSON path too long")
		}
	}
	sc := &jsonlRefScanner{paths: paths, vals: make([]jsonlRefValue, len(paths))}
	for p, path := range paths {
		if len(path) < len(sc.top) {
			sc.top[len(path)] |= 1 << p
		}
		for n := 0; n < len(path) && n < len(sc.top); n++ {
			if path[n] == '.' {
				sc.top[n] |= 1 << p
			}
		}
	}
	return sc
}

func jsonlRefSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func jsonlRefErrAt(data []byte, i int, want string) error {
	if i >= len(data) {
		return &jsonlRefSyntaxError{i, "unexpected end of line, want " + want}
	}
	return &jsonlRefSyntaxError{i, fmt.Sprintf("unexpected %q, want %s", data[i], want)}
}

// scan reads data, which must hold one JSON object and nothing else but
// white space, and sets the value of each path (kind jsonlAbsent when the
// object has none). The error is errRefNotJSONObject or a *jsonlRefSyntaxError.
func (sc *jsonlRefScanner) scan(data []byte) error {
	clear(sc.vals)
	sc.buf = sc.buf[:0]
	i := jsonlRefSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return errRefNotJSONObject
	}
	if len(sc.offs) == 0 {
		sc.offs = append(sc.offs, jsonlRefOffsets{})
	}
	i, err := sc.object(data, i, 1, uint32(1)<<len(sc.paths)-1, 0)
	if err != nil {
		return err
	}
	if i = jsonlRefSpace(data, i); i < len(data) {
		return &jsonlRefSyntaxError{i, fmt.Sprintf("unexpected %q after the object", data[i])}
	}
	return nil
}

// object reads the object at data[i] ('{'), at nesting depth depth, for the
// paths in active, of which sc.offs[level] holds how much is matched (it is
// a field rather than a local so that it costs no allocation per line: the
// recursion would move a local to the heap).
func (sc *jsonlRefScanner) object(data []byte, i, depth int, active uint32, level int) (int, error) {
	if active == 0 {
		return sc.skip(data, i, depth-1)
	}
	if depth > jsonlMaxDepth {
		return 0, &jsonlRefSyntaxError{i, "nested too deep"}
	}
	i = jsonlRefSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, jsonlRefErrAt(data, i, "a member name")
		}
		end, esc, err := jsonlRefScanString(data, i)
		if err != nil {
			return 0, err
		}
		key := data[i+1 : end-1]
		if esc {
			mark := len(sc.buf)
			sc.buf = jsonlRefUnquote(sc.buf, key)
			key = sc.buf[mark:]
		}
		if i = jsonlRefSpace(data, end); i >= len(data) || data[i] != ':' {
			return 0, jsonlRefErrAt(data, i, "':'")
		}
		i = jsonlRefSpace(data, i+1)

		var leaf, child uint32
		cand := active
		if level == 0 && len(key) < len(sc.top) {
			cand &= sc.top[len(key)] // the outermost object: sc.offs[0] is all 0
		}
		for m := cand; m != 0; m &= m - 1 {
			p := bits.TrailingZeros32(m)
			rem := sc.paths[p][sc.offs[level][p]:]
			switch {
			case len(rem) < len(key):
			case len(rem) == len(key):
				if jsonlRefSameKey(rem, key) {
					leaf |= 1 << p
				}
			case rem[len(key)] == '.' && rem[:len(key)] == string(key):
				child |= 1 << p
				sc.vals[p] = jsonlRefValue{} // a repeated member replaces the earlier one
			}
		}
		start, plain := i, false
		if child != 0 && i < len(data) && data[i] == '{' {
			if len(sc.offs) == level+1 {
				sc.offs = append(sc.offs, jsonlRefOffsets{})
			}
			sc.offs[level+1] = sc.offs[level]
			for m := child; m != 0; m &= m - 1 {
				sc.offs[level+1][bits.TrailingZeros32(m)] += uint16(len(key) + 1)
			}
			i, err = sc.object(data, i, depth+1, child, level+1)
		} else if i < len(data) && data[i] == '"' { // skip's own reading of a string or a number, without its stack
			var esc bool
			i, esc, err = jsonlRefScanString(data, i)
			plain = !esc
		} else if i < len(data) && (data[i] == '-' || data[i] >= '0' && data[i] <= '9') {
			i, err = jsonlRefScanNumber(data, i)
		} else {
			i, err = sc.skip(data, i, depth)
		}
		if err != nil {
			return 0, err
		}
		for m := leaf; m != 0; m &= m - 1 {
			v := jsonlRefValueOf(data[start:i])
			v.plain = plain
			sc.vals[bits.TrailingZeros32(m)] = v
		}
		i = jsonlRefSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsonlRefSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			return i + 1, nil
		}
		return 0, jsonlRefErrAt(data, i, "',' or '}'")
	}
}

// jsonlRefSameKey is rem == string(key) for strings of the same length,
// compared in place: member names are short, and a call to compare them
// costs more than the comparison.
func jsonlRefSameKey(rem string, key []byte) bool {
	if len(key) > 16 {
		return rem == string(key)
	}
	for i := range key {
		if rem[i] != key[i] {
			return false
		}
	}
	return true
}

// jsonlRefValueOf classifies a valid JSON value.
func jsonlRefValueOf(v []byte) jsonlRefValue {
	switch v[0] {
	case '"':
		return jsonlRefValue{kind: jsonlString, raw: v[1 : len(v)-1]}
	case '{':
		return jsonlRefValue{kind: jsonlObject, raw: v}
	case '[':
		return jsonlRefValue{kind: jsonlArray, raw: v}
	case 'n':
		return jsonlRefValue{kind: jsonlNull, raw: v}
	case 't', 'f':
		return jsonlRefValue{kind: jsonlBool, raw: v}
	}
	return jsonlRefValue{kind: jsonlNumber, raw: v}
}

// skip validates the value at data[i] inside containers nested depth deep
// and returns the index after it. It keeps its own stack rather than
// recursing, so a deeply nested line costs no Go stack.
func (sc *jsonlRefScanner) skip(data []byte, i, depth int) (int, error) {
	stack := sc.stack[:0]
	var err error
	for {
		// A value starts at i.
		if i >= len(data) {
			return 0, jsonlRefErrAt(data, i, "a value")
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth+len(stack)+1 > jsonlMaxDepth {
				return 0, &jsonlRefSyntaxError{i, "nested too deep"}
			}
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			stack = append(stack, closing)
			sc.stack = stack // keep the grown buffer
			i = jsonlRefSpace(data, i+1)
			if i < len(data) && data[i] == closing {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if closing == '}' {
				if i, err = jsonlRefMemberName(data, i); err != nil {
					return 0, err
				}
			}
			continue
		case '"':
			if i, _, err = jsonlRefScanString(data, i); err != nil {
				return 0, err
			}
		case 't':
			if i, err = jsonlRefLiteral(data, i, "true"); err != nil {
				return 0, err
			}
		case 'f':
			if i, err = jsonlRefLiteral(data, i, "false"); err != nil {
				return 0, err
			}
		case 'n':
			if i, err = jsonlRefLiteral(data, i, "null"); err != nil {
				return 0, err
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return 0, jsonlRefErrAt(data, i, "a value")
			}
			if i, err = jsonlRefScanNumber(data, i); err != nil {
				return 0, err
			}
		}
		// A value ended before i: close containers until the next value.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = jsonlRefSpace(data, i)
			top := stack[len(stack)-1]
			if i < len(data) && data[i] == top {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if i >= len(data) || data[i] != ',' {
				return 0, jsonlRefErrAt(data, i, fmt.Sprintf("',' or '%c'", top))
			}
			i = jsonlRefSpace(data, i+1)
			if top == '}' {
				if i, err = jsonlRefMemberName(data, i); err != nil {
					return 0, err
				}
			}
			break
		}
	}
}

// jsonlRefMemberName reads `"name" :` and the space after it.
func jsonlRefMemberName(data []byte, i int) (int, error) {
	if i >= len(data) || data[i] != '"' {
		return 0, jsonlRefErrAt(data, i, "a member name")
	}
	i, _, err := jsonlRefScanString(data, i)
	if err != nil {
		return 0, err
	}
	if i = jsonlRefSpace(data, i); i >= len(data) || data[i] != ':' {
		return 0, jsonlRefErrAt(data, i, "':'")
	}
	return jsonlRefSpace(data, i+1), nil
}

func jsonlRefLiteral(data []byte, i int, lit string) (int, error) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		for k := 0; k < len(lit); k++ {
			if i+k >= len(data) || data[i+k] != lit[k] {
				return 0, jsonlRefErrAt(data, i+k, fmt.Sprintf("%q", lit))
			}
		}
	}
	return i + len(lit), nil
}

// jsonlRefPlain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var jsonlRefPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// jsonlRefScanString validates the string starting at data[i] ('"') and returns
// the index after its closing quote and whether it holds escapes.
func jsonlRefScanString(data []byte, i int) (end int, esc bool, err error) {
	for j := i + 1; j < len(data); {
		// Eight bytes at a time while none of them is special, then byte
		// by byte to the first that is.
		for j+8 <= len(data) {
			m := jsonlRefSpecial8(binary.LittleEndian.Uint64(data[j:]))
			if m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for j < len(data) && jsonlRefPlain[data[j]] {
			j++
		}
		if j == len(data) {
			break
		}
		c := data[j]
		switch {
		case c == '"':
			return j + 1, esc, nil
		case c == '\\':
			esc = true
			if j+1 >= len(data) {
				return 0, false, &jsonlRefSyntaxError{j + 1, "unexpected end of line in a string escape"}
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(data) || !jsonlRefIsHex(data[k]) {
						return 0, false, jsonlRefErrAt(data, k, "4 hex digits after \\u")
					}
				}
				j += 6
			default:
				return 0, false, &jsonlRefSyntaxError{j + 1, fmt.Sprintf("invalid escape \\%c in a string", data[j+1])}
			}
		case c < 0x20:
			return 0, false, &jsonlRefSyntaxError{j, fmt.Sprintf("control character %#02x in a string", c)}
		default:
			j++
		}
	}
	return 0, false, &jsonlRefSyntaxError{len(data), "unexpected end of line in a string"}
}

// jsonlRefSpecial8 returns a mask whose lowest set bit is the high bit of the
// first of the eight bytes of x (little-endian: the first in the lowest
// byte) that is not plain (jsonlRefPlain): a quote, a backslash or a control
// character; 0 when all are plain. Bits above the lowest may be wrong
// (a borrow carries into the next byte), the lowest is not.
func jsonlRefSpecial8(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((q-ones)&^q | (b-ones)&^b | (x-ones*0x20)&^x) & highs
}

func jsonlRefIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// jsonlRefScanNumber validates the number starting at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonlRefScanNumber(data []byte, i int) (int, error) {
	digits := func(j int) int {
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		return j
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(i + 1)
	default:
		return 0, jsonlRefErrAt(data, i, "a digit")
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, jsonlRefErrAt(data, j, "a digit after '.'")
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, jsonlRefErrAt(data, j, "a digit in the exponent")
		}
		i = j
	}
	return i, nil
}

// str returns the decoded contents of a string value (valid until the
// next scan); for other kinds, the raw literal.
func (sc *jsonlRefScanner) str(v jsonlRefValue) []byte {
	if v.kind != jsonlString || v.plain {
		return v.raw
	}
	if bytes.IndexByte(v.raw, '\\') >= 0 {
		mark := len(sc.buf)
		sc.buf = jsonlRefUnquote(sc.buf, v.raw)
		return sc.buf[mark:]
	}
	return v.raw
}

func jsonlRefHex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// jsonlRefUnquote appends the decoded contents of a valid JSON string (without
// its quotes) to dst. Like encoding/json, a \u escape of a lone UTF-16
// surrogate decodes to U+FFFD.
func jsonlRefUnquote(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := jsonlRefHex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, jsonlRefHex4(s[i+2:])); dec != utf8.RuneError {
						dst = utf8.AppendRune(dst, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}
