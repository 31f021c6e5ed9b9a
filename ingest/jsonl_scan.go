package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonlScanner extracts the values at a few dotted paths from one JSON
// object, validating the whole object on the way, without building it: no
// map per line, no allocation once its buffers have grown.
//
// A path's segments name nested object members: "request.method" is the
// member "method" of the member "request". A member whose own name holds a
// dot matches too ({"request.method": "GET"}). As with encoding/json
// decoding into a map, a repeated member counts once, the last time.
// Values are kept raw (see jsonlValue) and strings decoded only when asked
// for (str). Validation follows RFC 8259 as encoding/json.Valid does,
// including its nesting limit of 10,000; like encoding/json it does not
// reject invalid UTF-8.
type jsonlScanner struct {
	paths []string
	vals  []jsonlValue
	// top[n] are the paths a member name of n bytes (n < len(top)) of the
	// outermost object may match: the paths of n bytes, and those with a
	// '.' after n bytes. A longer name may match any.
	top [64]uint32
	// word[p] is the first 8 bytes of paths[p] as a little-endian word,
	// zero beyond its end: the fast path compares member names with it.
	word  [jsonlMaxPaths]uint64
	plen  [jsonlMaxPaths]uint16 // len(paths[p])
	stack []byte                // closing brackets of the containers being skipped
	offs  []jsonlOffsets        // per object on the paths' way, how much each path matched
	buf   []byte                // decoded strings; valid until the next scan
}

// jsonlMaxPaths is how many paths one scanner extracts, jsonlMaxPathLen
// how long one may be.
const (
	jsonlMaxPaths   = 16
	jsonlMaxPathLen = 1 << 12
)

// jsonlOffsets holds how much of each path the enclosing objects matched.
type jsonlOffsets [jsonlMaxPaths]uint16

// jsonlMaxDepth is encoding/json's nesting limit.
const jsonlMaxDepth = 10000

type jsonlKind uint8

const (
	jsonlAbsent jsonlKind = iota
	jsonlNull
	jsonlBool
	jsonlNumber
	jsonlString
	jsonlObject
	jsonlArray
)

// jsonlValue is one extracted value. raw is the literal as written (a
// number, true, an object with its braces), for a string its contents
// between the quotes with escapes undecoded.
type jsonlValue struct {
	kind jsonlKind
	raw  []byte
	// plain: a string known to hold no escape (scanned so), whose raw
	// bytes are its contents; false when that is not known.
	plain bool
}

// errNotJSONObject is scan's error for a line that is not an object at all.
var errNotJSONObject = errors.New("is not a JSON object")

// jsonlSyntaxError is scan's error for malformed JSON; off is 0-based.
type jsonlSyntaxError struct {
	off int
	msg string
}

func (e *jsonlSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off+1, e.msg)
}

func newJSONLScanner(paths ...string) *jsonlScanner {
	if len(paths) > jsonlMaxPaths {
		panic("ingest: too many JSON paths")
	}
	for _, p := range paths {
		if len(p) > jsonlMaxPathLen {
			panic("ingest: JSON path too long")
		}
	}
	sc := &jsonlScanner{paths: paths, vals: make([]jsonlValue, len(paths))}
	for p, path := range paths {
		sc.plen[p] = uint16(len(path))
		for k := 0; k < len(path) && k < 8; k++ {
			sc.word[p] |= uint64(path[k]) << (8 * k)
		}
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

func jsonlSpace(data []byte, i int) int {
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

func jsonlErrAt(data []byte, i int, want string) error {
	if i >= len(data) {
		return &jsonlSyntaxError{i, "unexpected end of line, want " + want}
	}
	return &jsonlSyntaxError{i, fmt.Sprintf("unexpected %q, want %s", data[i], want)}
}

// scan reads data, which must hold one JSON object and nothing else but
// white space, and sets the value of each path (kind jsonlAbsent when the
// object has none). The error is errNotJSONObject or a *jsonlSyntaxError.
func (sc *jsonlScanner) scan(data []byte) error {
	i, err := sc.begin(data)
	if err != nil {
		return err
	}
	if sc.fastScan(data, i) {
		return nil
	}
	// The fast path gave up (see jsonl_fast.go): start over on the slow
	// one, which finds the error if there is one.
	return sc.slowScan(data)
}

// begin readies the scanner for data: no value set, no string decoded. It
// returns the index of the object's '{', errNotJSONObject when there is
// none.
func (sc *jsonlScanner) begin(data []byte) (int, error) {
	clear(sc.vals)
	sc.buf = sc.buf[:0]
	i := jsonlSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return 0, errNotJSONObject
	}
	if len(sc.offs) == 0 {
		sc.offs = append(sc.offs, jsonlOffsets{})
	}
	return i, nil
}

// slowScan is scan without the fast path.
func (sc *jsonlScanner) slowScan(data []byte) error {
	i, err := sc.begin(data)
	if err != nil {
		return err
	}
	i, err = sc.object(data, i, 1, uint32(1)<<len(sc.paths)-1, 0)
	if err != nil {
		return err
	}
	if i = jsonlSpace(data, i); i < len(data) {
		return &jsonlSyntaxError{i, fmt.Sprintf("unexpected %q after the object", data[i])}
	}
	return nil
}

// object reads the object at data[i] ('{'), at nesting depth depth, for the
// paths in active, of which sc.offs[level] holds how much is matched (it is
// a field rather than a local so that it costs no allocation per line: the
// recursion would move a local to the heap).
func (sc *jsonlScanner) object(data []byte, i, depth int, active uint32, level int) (int, error) {
	if active == 0 {
		return sc.skip(data, i, depth-1)
	}
	if depth > jsonlMaxDepth {
		return 0, &jsonlSyntaxError{i, "nested too deep"}
	}
	i = jsonlSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, jsonlErrAt(data, i, "a member name")
		}
		end, esc, err := jsonlScanString(data, i)
		if err != nil {
			return 0, err
		}
		key := data[i+1 : end-1]
		if esc {
			mark := len(sc.buf)
			sc.buf = jsonlUnquote(sc.buf, key)
			key = sc.buf[mark:]
		}
		if i = jsonlSpace(data, end); i >= len(data) || data[i] != ':' {
			return 0, jsonlErrAt(data, i, "':'")
		}
		i = jsonlSpace(data, i+1)

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
				if jsonlSameKey(rem, key) {
					leaf |= 1 << p
				}
			case rem[len(key)] == '.' && rem[:len(key)] == string(key):
				child |= 1 << p
				sc.vals[p] = jsonlValue{} // a repeated member replaces the earlier one
			}
		}
		start, plain := i, false
		if child != 0 && i < len(data) && data[i] == '{' {
			if len(sc.offs) == level+1 {
				sc.offs = append(sc.offs, jsonlOffsets{})
			}
			sc.offs[level+1] = sc.offs[level]
			for m := child; m != 0; m &= m - 1 {
				sc.offs[level+1][bits.TrailingZeros32(m)] += uint16(len(key) + 1)
			}
			i, err = sc.object(data, i, depth+1, child, level+1)
		} else if i < len(data) && data[i] == '"' { // skip's own reading of a string or a number, without its stack
			var esc bool
			i, esc, err = jsonlScanString(data, i)
			plain = !esc
		} else if i < len(data) && (data[i] == '-' || data[i] >= '0' && data[i] <= '9') {
			i, err = jsonlScanNumber(data, i)
		} else {
			i, err = sc.skip(data, i, depth)
		}
		if err != nil {
			return 0, err
		}
		for m := leaf; m != 0; m &= m - 1 {
			v := jsonlValueOf(data[start:i])
			v.plain = plain
			sc.vals[bits.TrailingZeros32(m)] = v
		}
		i = jsonlSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsonlSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			return i + 1, nil
		}
		return 0, jsonlErrAt(data, i, "',' or '}'")
	}
}

// jsonlSameKey is rem == string(key) for strings of the same length,
// compared in place: member names are short, and a call to compare them
// costs more than the comparison.
func jsonlSameKey(rem string, key []byte) bool {
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

// jsonlValueOf classifies a valid JSON value.
func jsonlValueOf(v []byte) jsonlValue {
	switch v[0] {
	case '"':
		return jsonlValue{kind: jsonlString, raw: v[1 : len(v)-1]}
	case '{':
		return jsonlValue{kind: jsonlObject, raw: v}
	case '[':
		return jsonlValue{kind: jsonlArray, raw: v}
	case 'n':
		return jsonlValue{kind: jsonlNull, raw: v}
	case 't', 'f':
		return jsonlValue{kind: jsonlBool, raw: v}
	}
	return jsonlValue{kind: jsonlNumber, raw: v}
}

// skip validates the value at data[i] inside containers nested depth deep
// and returns the index after it. It keeps its own stack rather than
// recursing, so a deeply nested line costs no Go stack.
func (sc *jsonlScanner) skip(data []byte, i, depth int) (int, error) {
	stack := sc.stack[:0]
	var err error
	for {
		// A value starts at i.
		if i >= len(data) {
			return 0, jsonlErrAt(data, i, "a value")
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth+len(stack)+1 > jsonlMaxDepth {
				return 0, &jsonlSyntaxError{i, "nested too deep"}
			}
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			stack = append(stack, closing)
			sc.stack = stack // keep the grown buffer
			i = jsonlSpace(data, i+1)
			if i < len(data) && data[i] == closing {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if closing == '}' {
				if i, err = jsonlMemberName(data, i); err != nil {
					return 0, err
				}
			}
			continue
		case '"':
			if i, _, err = jsonlScanString(data, i); err != nil {
				return 0, err
			}
		case 't':
			if i, err = jsonlLiteral(data, i, "true"); err != nil {
				return 0, err
			}
		case 'f':
			if i, err = jsonlLiteral(data, i, "false"); err != nil {
				return 0, err
			}
		case 'n':
			if i, err = jsonlLiteral(data, i, "null"); err != nil {
				return 0, err
			}
		default:
			if c != '-' && (c < '0' || c > '9') {
				return 0, jsonlErrAt(data, i, "a value")
			}
			if i, err = jsonlScanNumber(data, i); err != nil {
				return 0, err
			}
		}
		// A value ended before i: close containers until the next value.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = jsonlSpace(data, i)
			top := stack[len(stack)-1]
			if i < len(data) && data[i] == top {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if i >= len(data) || data[i] != ',' {
				return 0, jsonlErrAt(data, i, fmt.Sprintf("',' or '%c'", top))
			}
			i = jsonlSpace(data, i+1)
			if top == '}' {
				if i, err = jsonlMemberName(data, i); err != nil {
					return 0, err
				}
			}
			break
		}
	}
}

// jsonlMemberName reads `"name" :` and the space after it.
func jsonlMemberName(data []byte, i int) (int, error) {
	if i >= len(data) || data[i] != '"' {
		return 0, jsonlErrAt(data, i, "a member name")
	}
	i, _, err := jsonlScanString(data, i)
	if err != nil {
		return 0, err
	}
	if i = jsonlSpace(data, i); i >= len(data) || data[i] != ':' {
		return 0, jsonlErrAt(data, i, "':'")
	}
	return jsonlSpace(data, i+1), nil
}

func jsonlLiteral(data []byte, i int, lit string) (int, error) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		for k := 0; k < len(lit); k++ {
			if i+k >= len(data) || data[i+k] != lit[k] {
				return 0, jsonlErrAt(data, i+k, fmt.Sprintf("%q", lit))
			}
		}
	}
	return i + len(lit), nil
}

// jsonlPlain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var jsonlPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// jsonlScanString validates the string starting at data[i] ('"') and returns
// the index after its closing quote and whether it holds escapes.
func jsonlScanString(data []byte, i int) (end int, esc bool, err error) {
	for j := i + 1; j < len(data); {
		// Eight bytes at a time while none of them is special, then byte
		// by byte to the first that is.
		for j+8 <= len(data) {
			m := jsonlSpecial8(binary.LittleEndian.Uint64(data[j:]))
			if m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for j < len(data) && jsonlPlain[data[j]] {
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
				return 0, false, &jsonlSyntaxError{j + 1, "unexpected end of line in a string escape"}
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(data) || !jsonlIsHex(data[k]) {
						return 0, false, jsonlErrAt(data, k, "4 hex digits after \\u")
					}
				}
				j += 6
			default:
				return 0, false, &jsonlSyntaxError{j + 1, fmt.Sprintf("invalid escape \\%c in a string", data[j+1])}
			}
		case c < 0x20:
			return 0, false, &jsonlSyntaxError{j, fmt.Sprintf("control character %#02x in a string", c)}
		default:
			j++
		}
	}
	return 0, false, &jsonlSyntaxError{len(data), "unexpected end of line in a string"}
}

// jsonlSpecial8 returns a mask whose lowest set bit is the high bit of the
// first of the eight bytes of x (little-endian: the first in the lowest
// byte) that is not plain (jsonlPlain): a quote, a backslash or a control
// character; 0 when all are plain. Bits above the lowest may be wrong
// (a borrow carries into the next byte), the lowest is not.
func jsonlSpecial8(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	// (q-ones)&^q | (b-ones)&^b | (x-ones*0x20)&^x, but the high bit of
	// each byte of q and b is that of x, so one &^x does for the three.
	return ((q - ones) | (b - ones) | (x - ones*0x20)) &^ x & highs
}

func jsonlIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// jsonlScanNumber validates the number starting at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonlScanNumber(data []byte, i int) (int, error) {
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
		return 0, jsonlErrAt(data, i, "a digit")
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, jsonlErrAt(data, j, "a digit after '.'")
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
			return 0, jsonlErrAt(data, j, "a digit in the exponent")
		}
		i = j
	}
	return i, nil
}

// str returns the decoded contents of a string value (valid until the
// next scan); for other kinds, the raw literal.
func (sc *jsonlScanner) str(v *jsonlValue) []byte {
	if v.kind != jsonlString || v.plain {
		return v.raw
	}
	if bytes.IndexByte(v.raw, '\\') >= 0 {
		mark := len(sc.buf)
		sc.buf = jsonlUnquote(sc.buf, v.raw)
		return sc.buf[mark:]
	}
	return v.raw
}

func jsonlHex4(b []byte) rune {
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

// jsonlUnquote appends the decoded contents of a valid JSON string (without
// its quotes) to dst. Like encoding/json, a \u escape of a lone UTF-16
// surrogate decodes to U+FFFD.
func jsonlUnquote(dst, s []byte) []byte {
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
			r := jsonlHex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, jsonlHex4(s[i+2:])); dec != utf8.RuneError {
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
