package names

import (
	"strings"
	"testing"
	"unicode"
)

// BenchmarkNeedsQuote: the check every log line's group value takes
// (ingest's Grouper), on a route as the access logs have them.
func BenchmarkNeedsQuote(b *testing.B) {
	routes := [][]byte{[]byte("/api/v1/users/{id}/orders"), []byte("/static/app.js"), []byte("/"), []byte("/api/v2/search")}
	n := 0
	for _, r := range routes {
		n += len(r)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, r := range routes {
			if NeedsQuote(r) {
				b.Fatal(string(r))
			}
		}
	}
}

// needsQuoteRef is NeedsQuote's rule read rune by rune, as it was written
// before it looked at words: the reference the fast one must agree with.
func needsQuoteRef(v string) bool {
	if v == Missing {
		return true
	}
	for _, r := range v {
		if r == '"' || unicode.IsSpace(r) {
			return true
		}
	}
	return false
}

// TestNeedsQuoteEveryPlace: one byte of each kind (every byte value, and
// runes of two to four bytes, spaces and not) at every place of plain
// words of 0 to 24 bytes, where the word check and its overlapping last
// word must find it; the answer is the reference's.
func TestNeedsQuoteEveryPlace(t *testing.T) {
	var odd []string
	for c := range 256 {
		odd = append(odd, string([]byte{byte(c)}))
	}
	odd = append(odd, "\u00a0", "\u0085", "\u2028", "\u3000", "é", "€", "😀", "\xff\xfe")
	for n := range 25 {
		plain := strings.Repeat("a/b-", 7)[:n]
		for at := 0; at <= n; at++ {
			for _, o := range odd {
				v := plain[:at] + o + plain[at:]
				if got, want := NeedsQuote(v), needsQuoteRef(v); got != want {
					t.Fatalf("NeedsQuote(%q) = %v, want %v", v, got, want)
				}
				if got, want := NeedsQuote([]byte(v)), needsQuoteRef(v); got != want {
					t.Fatalf("NeedsQuote([]byte(%q)) = %v, want %v", v, got, want)
				}
			}
		}
	}
}

func FuzzNeedsQuote(f *testing.F) {
	for _, s := range []string{"", "-", "/api/v1/users/{id}", "a b", "/x\u00a0y", "12345678\"", "1234567 ", "\xffabcdefgh"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := NeedsQuote(v), needsQuoteRef(v); got != want {
			t.Fatalf("NeedsQuote(%q) = %v, want %v", v, got, want)
		}
	})
}
