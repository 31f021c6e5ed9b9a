package ingest

import (
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
		require.NotEmpty(t, once)
		assert.Equal(t, byte('/'), once[0])
		assert.Equal(t, string(once), string(NormalizeRoute(nil, once)))
	})
}
