package names

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKeyMethod: the method with the keys known is the method key's value
// in any case, found by position, also when another value is quoted with
// spaces in it; without the keys, the first value that is a method as
// written; a quoted value or a missing one is no method.
func TestKeyMethod(t *testing.T) {
	for _, c := range []struct {
		name string
		by   []string
		want string
	}{
		{"get /users", []string{"method", "route"}, "GET"},
		{"/users POST", []string{"route", "http_method"}, "POST"},
		{"/users POST", []string{"route", "host"}, ""},
		{`"/a b" put h`, []string{"route", "method", "host"}, "PUT"},    // by the values, not the words
		{"/a b PATCH", []string{"route", "method"}, "PATCH"},            // unquoted spaces (older report): from the end
		{"DELETE /a b", []string{"Request_Method ", "route"}, "DELETE"}, // from the start, key case and space ignored
		{"x /a b y", []string{"host", "method", "route"}, ""},           // neither end
		{"- /users", []string{"method", "route"}, ""},                   // missing
		{"FETCH /users", []string{"method", "route"}, ""},               // not an HTTP method
		{"GET /users", nil, "GET"},                                      // shape
		{"/users get", nil, ""},                                         // shape: as written only
		{`"GET x" /users`, nil, ""},                                     // a quoted value is no word
		{"/users  GET", nil, "GET"},                                     // not the rule's: the name's words
	} {
		assert.Equal(t, c.want, ParseKey(c.name, c.by).Method(), "%q by %q", c.name, c.by)
	}
}

// TestKeyPath: the first value starting with "/" that was not quoted.
func TestKeyPath(t *testing.T) {
	for name, want := range map[string]string{
		"GET /users/{id}":   "/users/{id}",
		"/a /b":             "/a",
		`"/a b" /c`:         "/c",
		`"/a b"`:            "",
		"all":               "",
		"/x\xff":            "/x\xff",
		"GET  /users":       "/users", // two spaces: the name's words
		`"unclosed /users`:  "/users",
		"svc-a svc-b":       "",
		`- /users "-"`:      "/users",
		"GET /caf\u00e9 -x": "/caf\u00e9",
	} {
		assert.Equal(t, want, ParseKey(name, nil).Path(), "%q", name)
	}
}

// TestKeyByValues: one value per key, unquoted; one key takes a name that
// is not one value whole (reports written before values were quoted);
// more keys than values is no match.
func TestKeyByValues(t *testing.T) {
	for _, c := range []struct {
		name string
		by   []string
		want []string
		ok   bool
	}{
		{`GET "/a b"`, []string{"method", "route"}, []string{"GET", "/a b"}, true},
		{"GET - x", []string{"method", "route", "host"}, []string{"GET", "", "x"}, true},
		{"/a b", []string{"route"}, []string{"/a b"}, true},
		{`"x`, []string{"route"}, []string{`"x`}, true},
		{"/a b", []string{"route", "method", "host"}, nil, false},
		{"a  b", []string{"route", "method"}, nil, false},
	} {
		got, ok := ParseKey(c.name, c.by).ByValues()
		assert.Equal(t, c.ok, ok, "%q by %q", c.name, c.by)
		assert.Equal(t, c.want, got, "%q by %q", c.name, c.by)
	}
}
