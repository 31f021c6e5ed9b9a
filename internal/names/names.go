// Package names bounds the names that come from data (routes, services,
// label values, span names): a name longer than MaxBytes is cut, visibly
// and with a hash of the whole, wherever it is kept or written, so that a
// hostile input of a few megabyte-long names cannot make every report,
// table and snippet that repeats them take gigabytes, and two long names
// that share their beginning stay two names.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// MaxBytes is the longest name kept whole, in bytes.
const MaxBytes = 1024

// Cap returns s when it is at most MaxBytes long; else its first bytes, cut
// at a character boundary, and "…[cut: N bytes, sha256 H]", where N is the
// whole name's length and H the first 16 hex digits of its SHA-256: at
// most MaxBytes in all. The same name always gives the same result.
func Cap(s string) string {
	if len(s) <= MaxBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	tail := "…[cut: " + strconv.Itoa(len(s)) + " bytes, sha256 " + hex.EncodeToString(sum[:8]) + "]"
	keep := MaxBytes - len(tail)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + tail
}

// CapBytes is Cap for a name held as bytes: b itself when it is short
// enough.
func CapBytes(b []byte) []byte {
	if len(b) <= MaxBytes {
		return b
	}
	return []byte(Cap(string(b)))
}
