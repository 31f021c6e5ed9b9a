package ingest

import "strings"

// Methods are the request methods Sample.Method names: those of RFC 9110
// section 9.3 and PATCH (RFC 5789).
var Methods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// MethodOther is Sample.Method of a request whose method is a token other
// than Methods (a WebDAV LOCK, a client's own): its idempotency is
// unknown, so it is never taken for idempotent.
const MethodOther = "other"

// maxMethodLen is the longest method read as one; a longer token is no
// method (a line that is not HTTP).
const maxMethodLen = 32

// MethodName returns Sample.Method for the method b a format recorded:
// one of Methods (the strings themselves, so that no sample allocates),
// whatever its case, as the grouping by method reads it; MethodOther for
// another token; "" when b is empty, "-" or not a token (a request line
// nginx could not parse).
func MethodName[T string | []byte](b T) string {
	if len(b) == 0 || len(b) > maxMethodLen {
		return ""
	}
	for _, m := range Methods {
		if len(m) == len(b) && strings.EqualFold(m, string(b)) { // no allocation: compared in place
			return m
		}
	}
	for i := range len(b) {
		c := b[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return ""
		}
	}
	if len(b) == 1 && b[0] == '-' {
		return ""
	}
	return MethodOther
}
