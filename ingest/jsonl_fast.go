package ingest

import (
	"math/bits"
)

// The scanner's fast path: scan tries it first, and it either reads the
// whole line as the slow path (object, skip) would, with the same values,
// or gives up (-1) and scan starts over on the slow path, which then finds
// the error and words it. So the fast path never has to say why a line is
// wrong, and it may give up on lines that are valid but rare: a member
// name with an escape, containers nested more than jsonlFastDepth deep.
// What it must never do is accept a line the slow path rejects, or extract
// other values (FuzzJSONLScannerRef checks both).

// jsonlFastDepth bounds the nesting the fast path reads, in the objects on
// the paths' way and in a skipped value each: far below jsonlMaxDepth, so
// it needs no depth check of its own.
const jsonlFastDepth = 64

// jsonlWS reports whether c is JSON white space.
func jsonlWS(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// jsonlLowMask is the mask of the first n bytes (n <= 8) of a little-endian
// word.
func jsonlLowMask(n int) uint64 {
	return 1<<(uint(n)*8) - 1 // a shift by 64 is 0 in Go: all ones for n = 8
}

// fastScan is scan's fast path: false when it gave up. data[i] is '{'.
func (sc *jsonlScanner) fastScan(data []byte, i int) bool {
	active := uint32(1)<<len(sc.paths) - 1
	var end int
	if active == 0 {
		end = jsonlFastSkip(data, i)
	} else {
		end = sc.fastTop(data, i, active)
	}
	if end < 0 {
		return false
	}
	for ; end < len(data); end++ {
		if !jsonlWS(data[end]) {
			return false
		}
	}
	return true
}

// fastTop reads the outermost object, at data[i] ('{'), for the paths in
// active (not 0): the fast path's object at level 0, where a member name
// matches a path's first segment, which sc.word and sc.top let it compare
// in a word or two. A short name is read from one word, which holds the
// quote that ends it, as often the ':' after it and the value's first byte
// too.
func (sc *jsonlScanner) fastTop(data []byte, i int, active uint32) int {
	i++
	if i < len(data) && data[i] <= ' ' {
		i = jsonlSpace(data, i)
	}
	if i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
	name:
		// The member name, data[ks:ke], without escapes (else give up),
		// and its first 8 bytes as a word (zero beyond its end).
		ks := i + 1
		var ke int
		var word uint64
		if ks+8 <= len(data) {
			w := jsonlLoad64(data, ks)
			if m := jsonlSpecial8(w); m != 0 {
				sh := uint(bits.TrailingZeros64(m)) &^ 7 // 8 times the name's length
				rest := w >> (sh & 63)
				if byte(rest) != '"' {
					return -1 // an escape or a control character
				}
				ke = ks + int(sh>>3)
				word = w & (1<<(sh&63) - 1)
				// rest holds the quote and what follows, as far as the
				// word goes: 8 - len bytes.
				if sh <= 40 && byte(rest>>8) == ':' && byte(rest>>16) > ' ' {
					i = ke + 2
					goto value
				}
			} else if kw := ks + 8; kw+8 <= len(data) {
				// A name of 8 to 15 bytes ends in the next word.
				word = w
				w = jsonlLoad64(data, kw)
				if m := jsonlSpecial8(w); m != 0 {
					sh := uint(bits.TrailingZeros64(m)) &^ 7
					rest := w >> (sh & 63)
					if byte(rest) != '"' {
						return -1
					}
					ke = kw + int(sh>>3)
					if sh <= 40 && byte(rest>>8) == ':' && byte(rest>>16) > ' ' {
						i = ke + 2
						goto value
					}
				} else {
					ke = jsonlFastPlain(data, kw+8)
					if ke >= len(data) || data[ke] != '"' {
						return -1
					}
				}
			} else {
				word = w
				ke = jsonlFastPlain(data, kw)
				if ke >= len(data) || data[ke] != '"' {
					return -1
				}
			}
		} else {
			ke = jsonlFastPlain(data, ks)
			if ke >= len(data) || data[ke] != '"' {
				return -1
			}
			for k := ks; k < ke && k < ks+8; k++ {
				word |= uint64(data[k]) << (uint(k-ks) * 8)
			}
		}
		i = ke + 1
		if i < len(data) && data[i] == ':' {
			i++
		} else {
			if i = jsonlSpace(data, i); i >= len(data) || data[i] != ':' {
				return -1
			}
			i++
		}
		if i < len(data) && data[i] <= ' ' {
			i = jsonlSpace(data, i)
		}
		if i >= len(data) {
			return -1
		}

	value:
		var leaf, child uint32
		if klen := ke - ks; klen < len(sc.top) {
			// top: every candidate is klen bytes long, or has a '.' after
			// klen bytes; it matches when its first klen bytes do.
			mask := ^uint64(0)
			if klen < 8 {
				mask = jsonlLowMask(klen)
			}
			for m := active & sc.top[klen]; m != 0; m &= m - 1 {
				p := bits.TrailingZeros32(m)
				if klen <= 8 {
					if sc.word[p]&mask != word {
						continue
					}
				} else if sc.word[p] != word || sc.paths[p][8:klen] != string(data[ks+8:ke]) {
					continue
				}
				if int(sc.plen[p]) == klen {
					leaf |= 1 << p
				} else {
					child |= 1 << p
					sc.vals[p] = jsonlValue{} // a repeated member replaces the earlier one
				}
			}
		} else {
			key := data[ks:ke]
			for m := active; m != 0; m &= m - 1 {
				p := bits.TrailingZeros32(m)
				path := sc.paths[p]
				switch {
				case len(path) < len(key):
				case len(path) == len(key):
					if path == string(key) {
						leaf |= 1 << p
					}
				case path[len(key)] == '.' && path[:len(key)] == string(key):
					child |= 1 << p
					sc.vals[p] = jsonlValue{}
				}
			}
		}

		start := i
		var kind jsonlKind
		plain := false
		switch c := data[i]; {
		case c == '"':
			kind = jsonlString
			// A string that ends within the next word, without escapes.
			if j := i + 1; j+8 <= len(data) {
				w := jsonlLoad64(data, j)
				m := jsonlSpecial8(w)
				if m == 0 {
					var esc bool
					i, esc = jsonlFastStringAt(data, j+8)
					plain = !esc
					break
				}
				sh := uint(bits.TrailingZeros64(m)) &^ 7
				if rest := w >> (sh & 63); byte(rest) == '"' {
					i = j + int(sh>>3) + 1
					// The word often holds the ',' after the string and
					// the '"' of the next member's name.
					if sh <= 40 && byte(rest>>8) == ',' && byte(rest>>16) == '"' {
						if leaf != 0 {
							sc.setLeaf(leaf, data, start, i, jsonlString, true)
						}
						i++
						goto name
					}
					plain = true
					break
				}
				// An escape or a control character at j + sh/8.
				var esc bool
				i, esc = jsonlFastStringAt(data, j+int(sh>>3))
				plain = !esc
				break
			}
			var esc bool
			i, esc = jsonlFastString(data, i)
			plain = !esc
		case c == '-' || c-'0' < 10:
			i = jsonlFastNumber(data, i)
			kind = jsonlNumber
		case c == '{' && child != 0:
			if len(sc.offs) == 1 {
				sc.offs = append(sc.offs, jsonlOffsets{})
			}
			sc.offs[1] = jsonlOffsets{}
			for m := child; m != 0; m &= m - 1 {
				sc.offs[1][bits.TrailingZeros32(m)] = uint16(ke - ks + 1)
			}
			i = sc.fastObject(data, i, 2, child, 1)
		default:
			i = jsonlFastValue(data, i)
		}
		if i < 0 {
			return -1
		}
		if leaf != 0 {
			sc.setLeaf(leaf, data, start, i, kind, plain)
		}
		if i < len(data) && data[i] == ',' {
			i++
		} else {
			if i < len(data) && data[i] <= ' ' {
				i = jsonlSpace(data, i)
			}
			if i >= len(data) {
				return -1
			}
			if data[i] == '}' {
				return i + 1
			}
			if data[i] != ',' {
				return -1
			}
			i++
		}
		if i < len(data) && data[i] <= ' ' {
			i = jsonlSpace(data, i)
		}
	}
}

// setLeaf sets the values of the paths in leaf to data[start:end], of kind
// (0: not known, see jsonlValueOf). It stores the fields one by one: a
// jsonlValue built first and copied as a whole would be read back in 16
// bytes from the 1- and 8-byte stores that built it, which the processor
// cannot forward.
func (sc *jsonlScanner) setLeaf(leaf uint32, data []byte, start, end int, kind jsonlKind, plain bool) {
	raw := data[start:end]
	switch kind {
	case jsonlString:
		raw = data[start+1 : end-1]
	case jsonlNumber:
	default:
		v := jsonlValueOf(raw)
		kind, raw = v.kind, v.raw
	}
	for m := leaf; m != 0; m &= m - 1 {
		v := &sc.vals[bits.TrailingZeros32(m)]
		v.kind = kind
		v.raw = raw
		v.plain = plain
	}
}

// fastObject is the fast path's object below the outermost one: data[i] is
// '{', depth its nesting, level > 0 as in object.
func (sc *jsonlScanner) fastObject(data []byte, i, depth int, active uint32, level int) int {
	if depth > jsonlFastDepth {
		return -1
	}
	i++
	if i < len(data) && data[i] <= ' ' {
		i = jsonlSpace(data, i)
	}
	if i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		ks := i + 1
		ke, next := jsonlFastName(data, i)
		if ke < 0 {
			return -1
		}
		key := data[ks:ke]
		i = next

		var leaf, child uint32
		for m := active; m != 0; m &= m - 1 {
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
				sc.vals[p] = jsonlValue{}
			}
		}

		start := i
		var kind jsonlKind
		plain := false
		switch c := data[i]; {
		case c == '"':
			var esc bool
			i, esc = jsonlFastString(data, i)
			kind, plain = jsonlString, !esc
		case c == '-' || c-'0' < 10:
			i = jsonlFastNumber(data, i)
			kind = jsonlNumber
		case c == '{' && child != 0:
			if len(sc.offs) == level+1 {
				sc.offs = append(sc.offs, jsonlOffsets{})
			}
			sc.offs[level+1] = sc.offs[level]
			for m := child; m != 0; m &= m - 1 {
				sc.offs[level+1][bits.TrailingZeros32(m)] += uint16(len(key) + 1)
			}
			i = sc.fastObject(data, i, depth+1, child, level+1)
		default:
			i = jsonlFastValue(data, i)
		}
		if i < 0 {
			return -1
		}
		if leaf != 0 {
			sc.setLeaf(leaf, data, start, i, kind, plain)
		}
		if i < len(data) && data[i] <= ' ' {
			i = jsonlSpace(data, i)
		}
		if i >= len(data) {
			return -1
		}
		if data[i] == '}' {
			return i + 1
		}
		if data[i] != ',' {
			return -1
		}
		i++
		if i < len(data) && data[i] <= ' ' {
			i = jsonlSpace(data, i)
		}
	}
}

// jsonlFastPlain returns the index of the first byte at or after data[j]
// that is not plain (jsonlPlain), len(data) when there is none.
func jsonlFastPlain(data []byte, j int) int {
	for j+8 <= len(data) {
		if m := jsonlSpecial8(jsonlLoad64(data, j)); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(data) && jsonlPlain[data[j]] {
		j++
	}
	return j
}

// jsonlFastString reads the string at data[i] ('"') and returns the index
// after its closing quote (-1 when it is invalid) and whether it holds
// escapes.
func jsonlFastString(data []byte, i int) (int, bool) {
	return jsonlFastStringAt(data, i+1)
}

// jsonlFastStringAt is jsonlFastString from data[j] on, inside the string,
// the bytes before j known to be plain.
func jsonlFastStringAt(data []byte, j int) (int, bool) {
	esc := false
	for {
		// jsonlFastPlain, inline.
		for j+8 <= len(data) {
			if m := jsonlSpecial8(jsonlLoad64(data, j)); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				goto special
			}
			j += 8
		}
		for j < len(data) && jsonlPlain[data[j]] {
			j++
		}
		if j >= len(data) {
			return -1, false
		}
	special:
		switch data[j] {
		case '"':
			return j + 1, esc
		case '\\':
		default:
			return -1, false // a control character
		}
		esc = true
		if j+1 >= len(data) {
			return -1, false
		}
		switch data[j+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			j += 2
		case 'u':
			if j+6 > len(data) || !jsonlIsHex(data[j+2]) || !jsonlIsHex(data[j+3]) ||
				!jsonlIsHex(data[j+4]) || !jsonlIsHex(data[j+5]) {
				return -1, false
			}
			j += 6
		default:
			return -1, false
		}
	}
}

// jsonlNonDigit8 returns a mask whose lowest set bit is the high bit of the
// first of the eight bytes of x (little-endian) that is not a digit; 0 when
// all are. Bits above the lowest may be wrong, the lowest is not.
func jsonlNonDigit8(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	// below '0' (exact for the lowest byte so flagged), or above '9' or
	// 0x80 and more (a carry only into higher bytes).
	return ((x-ones*'0')&^x | (x + ones*(127-'9')) | x) & highs
}

// jsonlFastDigits returns the index of the first byte at or after data[i]
// that is not a digit.
func jsonlFastDigits(data []byte, i int) int {
	for i+8 <= len(data) {
		if m := jsonlNonDigit8(jsonlLoad64(data, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(data) && data[i]-'0' < 10 {
		i++
	}
	return i
}

// jsonlFastNumber reads the number at data[i] ('-' or a digit) as
// jsonlScanNumber does; -1 when it is invalid.
func jsonlFastNumber(data []byte, i int) int {
	if data[i] == '-' {
		i++
		if i >= len(data) {
			return -1
		}
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		i = jsonlFastDigits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := jsonlFastDigits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && data[i]|0x20 == 'e' {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := jsonlFastDigits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// jsonlFastLiteral reads true, false or null at data[i]; -1 when it is none.
func jsonlFastLiteral(data []byte, i int) int {
	switch data[i] {
	case 't':
		if len(data)-i >= 4 && string(data[i:i+4]) == "true" {
			return i + 4
		}
	case 'f':
		if len(data)-i >= 5 && string(data[i:i+5]) == "false" {
			return i + 5
		}
	case 'n':
		if len(data)-i >= 4 && string(data[i:i+4]) == "null" {
			return i + 4
		}
	}
	return -1
}

// jsonlFastValue reads any value at data[i] (i < len(data)); -1 when it is
// invalid or nested too deep for the fast path.
func jsonlFastValue(data []byte, i int) int {
	switch c := data[i]; {
	case c == '"':
		i, _ = jsonlFastString(data, i)
		return i
	case c == '-' || c-'0' < 10:
		return jsonlFastNumber(data, i)
	case c == '{' || c == '[':
		return jsonlFastSkip(data, i)
	}
	return jsonlFastLiteral(data, i)
}

// jsonlFastSkip reads the value at data[i], as skip does, with a stack of
// up to jsonlFastDepth containers in a word (a bit set for an object); -1
// when it is invalid or nested deeper.
func jsonlFastSkip(data []byte, i int) int {
	var stack uint64
	n := 0
	for {
		// A value starts at i.
		if i >= len(data) {
			return -1
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if n == jsonlFastDepth {
				return -1
			}
			obj := c == '{'
			stack <<= 1
			if obj {
				stack |= 1
			}
			n++
			i++
			if i < len(data) && data[i] <= ' ' {
				i = jsonlSpace(data, i)
			}
			if i >= len(data) {
				return -1
			}
			if data[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack >>= 1
				n--
				i++
				break
			}
			if obj {
				if i = jsonlFastMemberName(data, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			if i, _ = jsonlFastString(data, i); i < 0 {
				return -1
			}
		case c == '-' || c-'0' < 10:
			if i = jsonlFastNumber(data, i); i < 0 {
				return -1
			}
		default:
			if i = jsonlFastLiteral(data, i); i < 0 {
				return -1
			}
		}
		// A value ended before i: close containers until the next value.
		for {
			if n == 0 {
				return i
			}
			if i < len(data) && data[i] <= ' ' {
				i = jsonlSpace(data, i)
			}
			if i >= len(data) {
				return -1
			}
			closing := byte(']')
			if stack&1 != 0 {
				closing = '}'
			}
			if c := data[i]; c == closing {
				stack >>= 1
				n--
				i++
				continue
			} else if c != ',' {
				return -1
			}
			i++
			if i < len(data) && data[i] <= ' ' {
				i = jsonlSpace(data, i)
			}
			if stack&1 != 0 {
				if i = jsonlFastMemberName(data, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// jsonlFastMemberName reads `"name" :` and the space after it; -1 when
// that is not there.
func jsonlFastMemberName(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if j := i + 1; j+8 <= len(data) {
		// A short name, and often the ':' and the value's first byte,
		// in one word.
		w := jsonlLoad64(data, j)
		if m := jsonlSpecial8(w); m != 0 {
			sh := uint(bits.TrailingZeros64(m)) &^ 7
			if rest := w >> (sh & 63); byte(rest) == '"' {
				if sh <= 40 && byte(rest>>8) == ':' && byte(rest>>16) > ' ' {
					return j + int(sh>>3) + 2
				}
				i = j + int(sh>>3) + 1
			} else {
				i, _ = jsonlFastStringAt(data, j+int(sh>>3))
			}
		} else {
			i, _ = jsonlFastStringAt(data, j+8)
		}
	} else {
		i, _ = jsonlFastString(data, i)
	}
	if i < 0 {
		return -1
	}
	if i < len(data) && data[i] == ':' {
		i++
	} else {
		if i = jsonlSpace(data, i); i >= len(data) || data[i] != ':' {
			return -1
		}
		i++
	}
	if i < len(data) && data[i] <= ' ' {
		i = jsonlSpace(data, i)
	}
	return i
}

// jsonlFastName reads the member name at data[i], without escapes, and the
// ':' after it: the index of its closing quote and that of the value, -1
// when they are not there or the name has an escape.
func jsonlFastName(data []byte, i int) (ke, next int) {
	if i >= len(data) || data[i] != '"' {
		return -1, -1
	}
	j := i + 1
	if j+8 <= len(data) {
		w := jsonlLoad64(data, j)
		if m := jsonlSpecial8(w); m != 0 {
			sh := uint(bits.TrailingZeros64(m)) &^ 7
			rest := w >> (sh & 63)
			if byte(rest) != '"' {
				return -1, -1
			}
			ke = j + int(sh>>3)
			if sh <= 40 && byte(rest>>8) == ':' && byte(rest>>16) > ' ' {
				return ke, ke + 2
			}
		} else {
			ke = jsonlFastPlain(data, j+8)
		}
	} else {
		ke = jsonlFastPlain(data, j)
	}
	if ke >= len(data) || data[ke] != '"' {
		return -1, -1
	}
	i = ke + 1
	if i < len(data) && data[i] == ':' {
		i++
	} else {
		if i = jsonlSpace(data, i); i >= len(data) || data[i] != ':' {
			return -1, -1
		}
		i++
	}
	if i < len(data) && data[i] <= ' ' {
		i = jsonlSpace(data, i)
	}
	if i >= len(data) {
		return -1, -1
	}
	return ke, i
}
