package names

import (
	"slices"
	"strings"
)

// Key is a group's identity beside its display name: the values the name
// was written from (the group rule above) and, when the reader knows them,
// the --by keys they are the values of. Every package that reads something
// out of a group's name (its request method, its path, the labels of a
// saved report's group) reads it from a Key made by ParseKey, the one
// parser of group names; the edge of a call graph is Edge's.
type Key struct {
	// Name is the group's name as written ("GET /users/{id}").
	Name string
	// By are the keys of the grouping in their order (--by), nil when the
	// reader does not know them (a saved report's group, a config target).
	By []string
	// Values are the name's values (Split), nil when the name is not one
	// the group rule can have written: a reader then falls back on the
	// name's words (strings.Fields), as a person may have typed it.
	Values []string
}

// ParseKey reads a group's name into its Key; by, when known, names the
// keys of its values.
func ParseKey(name string, by []string) Key {
	k := Key{Name: name, By: by}
	if values, err := Split(name); err == nil {
		k.Values = values
	}
	return k
}

// words are the name's values as a reader of shapes sees them: those
// written unquoted and not missing ("-"), as no word of a name was read as
// a path or a method before values were quoted; or the name's words when
// it is not one the rule wrote.
func (k Key) words() []string {
	if k.Values == nil {
		return strings.Fields(k.Name)
	}
	out := make([]string, 0, len(k.Values))
	for _, v := range k.Values {
		if v != "" && !NeedsQuote(v) {
			out = append(out, v)
		}
	}
	return out
}

// Path is the request path the group holds: its first value that starts
// with "/" (written unquoted), "" when it has none ("GET /users/{id}":
// "/users/{id}"). It may not be valid UTF-8: a writer of config checks.
func (k Key) Path() string {
	for _, w := range k.words() {
		if strings.HasPrefix(w, "/") {
			return w
		}
	}
	return ""
}

// methodKeys are the --by keys (log fields, CSV columns, Prometheus
// labels) whose values are request methods.
var methodKeys = []string{"method", "http_method", "http_request_method", "request_method"}

// HTTPMethods are the methods of RFC 9110 and PATCH (RFC 5789): a group's
// method must be one of them to decide its idempotency or a route's match.
var HTTPMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// IsHTTPMethod reports whether m, as written, is one of HTTPMethods.
func IsHTTPMethod(m string) bool { return slices.Contains(HTTPMethods, m) }

// Method is the group's request method, "" when it has none. With the
// keys known, it is the value of the first method key (methodKeys), in any
// case; a name whose values do not match the keys one to one (a route
// holding spaces, written before values were quoted) gives it from the
// start or the end of its words, whichever side has no other key before
// it. Without the keys, it is the first word that is a method as written.
// A value that is not an HTTP method (a "-" for a missing one) is none.
func (k Key) Method() string {
	if k.By == nil {
		for _, w := range k.words() {
			if IsHTTPMethod(w) {
				return w
			}
		}
		return ""
	}
	at := slices.IndexFunc(k.By, func(b string) bool {
		return slices.Contains(methodKeys, strings.ToLower(strings.TrimSpace(b)))
	})
	if at < 0 {
		return ""
	}
	tokens := strings.Split(k.Name, " ")
	var m string
	switch {
	case len(k.Values) == len(k.By):
		m = k.Values[at]
	case len(tokens) == len(k.By):
		m = tokens[at]
	case at == 0:
		m = tokens[0]
	case at == len(k.By)-1:
		m = tokens[len(tokens)-1]
	default:
		return ""
	}
	if m = strings.ToUpper(m); !IsHTTPMethod(m) {
		return ""
	}
	return m
}

// ByValues are the group's values one per key of By, ok false when the
// name does not hold one value per key. With one key, a name that is not
// one such value is the value, as reports written before values were
// quoted have it.
func (k Key) ByValues() (values []string, ok bool) {
	if len(k.By) == 1 && len(k.Values) != 1 {
		return []string{k.Name}, true
	}
	if k.Values == nil || len(k.Values) != len(k.By) {
		return nil, false
	}
	return k.Values, true
}
