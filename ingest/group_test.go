package ingest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeRoute(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/users/42", "/users/{id}"},
		{"/users/42/orders/9f86d081884c7d65", "/users/{id}/orders/{id}"},
		{"/items/123e4567-e89b-12d3-a456-426614174000", "/items/{id}"},
		{"/v2/api/health", "/v2/api/health"},                     // short mixed names stay
		{"/static/app.js", "/static/app.js"},                     // dots: a file name, not an id
		{"/blob/deadbeef", "/blob/deadbeef"},                     // hex without a digit reads as a word
		{"/blob/deadbee5", "/blob/{id}"},                         // hex with a digit, 8 long
		{"/t/AbCdEfGh1234567890xyz", "/t/{id}"},                  // a long token
		{"/products/category-books", "/products/category-books"}, // letters and dashes only
		{"/a//b/", "/a//b/"},
		{"relative/7", "/relative/{id}"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, string(NormalizeRoute(nil, []byte(tt.in))), tt.in)
	}
}

func TestGrouperKeys(t *testing.T) {
	g, err := NewGrouper([]string{"route", "method", "status_class", "upstream", "host", "status"}, nil)
	require.NoError(t, err)
	s := Sample{Status: 504}
	f := Fields{Method: []byte("GET"), Path: []byte("http://example.com:80/users/42?x=1#top"), Upstream: []byte("10.0.0.1:80")}
	assert.Equal(t, "/users/{id} GET 5xx 10.0.0.1:80 - 504", g.Key(&s, &f), "missing host is a dash")
	assert.Equal(t, "/ - - - - -", g.Key(&Sample{}, &Fields{}))

	none, err := NewGrouper(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, none, "no keys, no grouping")

	_, err = NewGrouper([]string{"route", "colour"}, nil)
	assert.EqualError(t, err, `cannot group by "colour": log formats group by route, method, status_class, status, upstream, host`)
}

func TestGrouperRoutePatterns(t *testing.T) {
	g, err := NewGrouper([]string{"route"}, []string{"/users/{id}/posts/{post}", "/static/*", "/health"})
	require.NoError(t, err)
	tests := []struct{ path, want string }{
		{"/users/alice/posts/hello-world", "/users/{id}/posts/{post}"},
		{"/users/alice/posts", "/users/alice/posts"}, // too short for the pattern: normalized instead
		{"/users/alice/posts/x/y", "/users/alice/posts/x/y"},
		{"/static/css/site.css?v=3", "/static/*"},
		{"/static", "/static"}, // * needs at least one segment
		{"/health", "/health"},
		{"/health/", "/health"},
		{"/orders/17", "/orders/{id}"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, g.Key(&Sample{}, &Fields{Path: []byte(tt.path)}), tt.path)
	}
	for _, bad := range []string{"users/{id}", "/a/*/b"} {
		_, err := NewGrouper([]string{"route"}, []string{bad})
		assert.Error(t, err, bad)
	}
}

// TestGrouperQuotesRoute: grouped by the route alone, a route holding a
// space or a quote is written as the group rule quotes it, as it is among
// other keys, and the same route twice is the same name.
func TestGrouperQuotesRoute(t *testing.T) {
	alone, err := NewGrouper([]string{"route"}, nil)
	require.NoError(t, err)
	withMethod, err := NewGrouper([]string{"route", "method"}, nil)
	require.NoError(t, err)
	for _, tt := range []struct{ path, want string }{
		{"/a b/7", `"/a b/{id}"`},
		{`/say"hi"`, `"/say\"hi\""`},
		{"/plain/7", "/plain/{id}"},
	} {
		f := Fields{Path: []byte(tt.path), Method: []byte("GET")}
		assert.Equal(t, tt.want, alone.Key(&Sample{}, &f), tt.path)
		assert.Equal(t, tt.want, alone.Key(&Sample{}, &f), "%s, again", tt.path)
		assert.Equal(t, tt.want+" GET", withMethod.Key(&Sample{}, &f), tt.path)
	}
}

func TestGrouperDoesNotAllocate(t *testing.T) {
	g, err := NewGrouper([]string{"route", "method"}, []string{"/static/*"})
	require.NoError(t, err)
	f := Fields{Method: []byte("GET"), Path: []byte("/users/42?x=1")}
	p := Fields{Method: []byte("GET"), Path: []byte("/static/a.css")}
	s := Sample{Status: 200}
	g.Key(&s, &f)
	g.Key(&s, &p)
	allocs := testing.AllocsPerRun(100, func() {
		g.Key(&s, &f)
		g.Key(&s, &p)
	})
	assert.Zero(t, allocs)
}

// FuzzNormalizeRoute: normalization never panics, starts with "/", and is
// idempotent (a normalized route is its own route).
func FuzzNormalizeRoute(f *testing.F) {
	for _, s := range []string{"", "/", "/users/42", "/a//b/", "x", "/items/123e4567-e89b-12d3-a456-426614174000/x?y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		once := NormalizeRoute(nil, []byte(path))
		assert.Equal(t, string(normalizeRouteRef(nil, []byte(path))), string(once), "the segment-by-segment reading")
		assert.Equal(t, string(pathOfRef([]byte(path))), string(pathOf([]byte(path))), "pathOf")
		assert.Equal(t, string(normalizeRouteRef(nil, pathOfRef([]byte(path)))), string(normalizeTarget(nil, []byte(path))), "normalizeTarget")
		require.NotEmpty(t, once)
		assert.Equal(t, byte('/'), once[0])
		assert.Equal(t, string(once), string(NormalizeRoute(nil, once)))
	})
}

// NormalizeRoute's one-pass classification (identifierOf) agrees with
// isIdentifier on segments of every kind of byte, UUIDs and tokens among them.
func TestIdentifierOfAgreesWithIsIdentifier(t *testing.T) {
	segs := []string{"", "42", "users", "9f86d081884c7d65", "123e4567-e89b-12d3-a456-426614174000",
		"abcdefgh", "abcdef12", "Ab3_xYz9-Qw7_eRt5", "v1", "x.y", "ü12", "12-34", "________________1a", "1234567890abcdef1234567890abcdef1234", "123e4567-e89b-12d3-a456-42661417400g", "abcdefab-abcd-abcd-abcd-abcdefabcdef"}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "0123456789abcdefABCDEFghzGHZ-_.~%é"
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		segs = append(segs, string(b))
	}
	for _, s := range segs {
		var kinds uint8
		for i := 0; i < len(s); i++ {
			kinds |= idKind[s[i]]
		}
		if got, want := identifierOf([]byte(s), kinds), isIdentifier([]byte(s)); got != want {
			t.Fatalf("%q: identifierOf %v, isIdentifier %v", s, got, want)
		}
	}
}

// normalizeRouteRef is NormalizeRoute as first written, a segment at a
// time with isIdentifier: the reference of the one-pass reading.
func normalizeRouteRef(dst, path []byte) []byte {
	if len(path) == 0 || path[0] != '/' {
		dst = append(dst, '/')
	}
	for len(path) > 0 {
		i := bytes.IndexByte(path, '/')
		if i < 0 {
			i = len(path)
		}
		seg := path[:i]
		if isIdentifier(seg) {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, seg...)
		}
		if i < len(path) {
			dst = append(dst, '/')
			i++
		}
		path = path[i:]
	}
	return dst
}

// pathOfRef is pathOf as first written, with bytes.Index and IndexAny.
func pathOfRef(target []byte) []byte {
	if i := bytes.Index(target, []byte("://")); i >= 0 && i < 10 {
		rest := target[i+3:]
		if j := bytes.IndexByte(rest, '/'); j >= 0 {
			target = rest[j:]
		} else {
			target = []byte("/")
		}
	}
	if i := bytes.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	return target
}

// NormalizeRoute and pathOf read as their references do, on paths of
// random segments.
func TestNormalizeRouteAgreesWithReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	parts := []string{"/", "//", "users", "42", "9f86d081884c7d65", "123e4567-e89b-12d3-a456-426614174000", "a.js",
		"?x=1", "#f", "http://h", "https://host:8080", "://", "v1", "Ab3_xYz9-Qw7_eRt5", ""}
	for range 20000 {
		var b []byte
		for range r.IntN(8) {
			b = append(b, parts[r.IntN(len(parts))]...)
		}
		if got, want := NormalizeRoute(nil, b), normalizeRouteRef(nil, b); string(got) != string(want) {
			t.Fatalf("NormalizeRoute(%q) = %q, want %q", b, got, want)
		}
		if got, want := normalizeTarget(nil, b), normalizeRouteRef(nil, pathOfRef(b)); string(got) != string(want) {
			t.Fatalf("normalizeTarget(%q) = %q, want %q", b, got, want)
		}
		if got, want := pathOf(b), pathOfRef(b); string(got) != string(want) {
			t.Fatalf("pathOf(%q) = %q, want %q", b, got, want)
		}
	}
}
