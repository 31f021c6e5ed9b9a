package targettest

import (
	"bytes"
	"encoding/json"
	"fmt" //nolint:staticcheck // the decoder Istio's own types use
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	"sigs.k8s.io/yaml"
)

// The helpers of the readers' tests: objects described for failure
// messages, held to the lines of their file, read from fixtures.

// DescribeObject prints an object for failure messages.
func DescribeObject(o target.Object) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %q at %s upstream %q matches %v\n", o.Target, o.Kind, o.Name, o.Pos, o.Upstream, o.Matches)
	for _, s := range objectSettings(o) {
		fmt.Fprintf(&b, "  %s = %v at %s raw %q default %v\n", s.name, s.value, s.pos, s.raw, s.def)
	}
	if o.Jitter != "" {
		fmt.Fprintf(&b, "  jitter %s\n", o.Jitter)
	}
	for _, n := range o.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

type settingView struct {
	name  string
	value any
	pos   target.Pos
	raw   string
	def   bool
}

// objectSettings lists the settings an object has.
func objectSettings(o target.Object) []settingView {
	var out []settingView
	add := func(name string, v any, pos target.Pos, raw string, def bool) {
		out = append(out, settingView{name, v, pos, raw, def})
	}
	for _, f := range []struct {
		name string
		s    *target.Setting[float64]
	}{{"Timeout", o.Timeout}, {"PerTryTimeout", o.PerTryTimeout}, {"BackoffBase", o.BackoffBase}, {"BackoffMax", o.BackoffMax},
		{"RetryBudget", o.RetryBudget}, {"HedgeDelay", o.HedgeDelay}, {"ConnectTimeout", o.ConnectTimeout}, {"QueueTimeout", o.QueueTimeout}} {
		if f.s != nil {
			add(f.name, f.s.Value, f.s.Pos, f.s.Raw, f.s.Default)
		}
	}
	for _, f := range []struct {
		name string
		s    *target.Setting[int]
	}{{"Attempts", o.Attempts}, {"HedgeAttempts", o.HedgeAttempts}, {"MaxInFlight", o.MaxInFlight}} {
		if f.s != nil {
			add(f.name, f.s.Value, f.s.Pos, f.s.Raw, f.s.Default)
		}
	}
	if s := o.RetryOn; s != nil {
		add("RetryOn", s.Value, s.Pos, s.Raw, s.Default)
	}
	if s := o.RetryNonIdempotent; s != nil {
		add("RetryNonIdempotent", s.Value, s.Pos, s.Raw, s.Default)
	}
	return out
}

// RequireInside fails unless every object and setting stands on a line of
// the input, in the file read, and every default stands where its object
// does.
func RequireInside(t testing.TB, file string, data []byte, objs []target.Object) {
	t.Helper()
	lines := bytes.Count(data, []byte("\n")) + 1
	for _, o := range objs {
		if o.Pos.File != file || o.Pos.Line < 1 || o.Pos.Line > lines {
			t.Fatalf("object at %s, outside %s's %d lines:\n%s", o.Pos, file, lines, DescribeObject(o))
		}
		for _, s := range objectSettings(o) {
			if s.pos.File != file || s.pos.Line < 1 || s.pos.Line > lines {
				t.Fatalf("%s at %s, outside %s's %d lines:\n%s", s.name, s.pos, file, lines, DescribeObject(o))
			}
			if s.def && s.raw != "" {
				t.Fatalf("%s is a default with a raw value %q:\n%s", s.name, s.raw, DescribeObject(o))
			}
		}
		if o.Name == "" || o.Kind == "" || o.Target == "" {
			t.Fatalf("object without a name, kind or target:\n%s", DescribeObject(o))
		}
	}
}

// MustFile reads a file of the tests.
func MustFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// ReadConfig reads a fixture with a target, which must detect it.
func ReadConfig(t *testing.T, tg target.Target, path string) []target.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, tg.Detects(path, data), "%s does not detect %s", tg.Name, path)
	objs, err := tg.Read(path, data, nil)
	require.NoError(t, err)
	RequireInside(t, path, data, objs)
	return objs
}

// ByName indexes objects by name.
func ByName(t *testing.T, objs []target.Object) map[string]target.Object {
	t.Helper()
	m := map[string]target.Object{}
	for _, o := range objs {
		_, dup := m[o.Name]
		require.False(t, dup, "two objects named %q", o.Name)
		m[o.Name] = o
	}
	return m
}

// FixtureDocs returns the documents of a manifest fixture as JSON, for
// the targets' own Go types.
func FixtureDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]byte
	for _, d := range YAMLDocs(data) {
		j, err := yaml.YAMLToJSON(d)
		require.NoError(t, err, path)
		if string(bytes.TrimSpace(j)) == "null" {
			continue
		}
		out = append(out, j)
	}
	return out
}

// KindOf returns the apiVersion and kind of a JSON document.
func KindOf(t *testing.T, doc []byte) (string, string) {
	t.Helper()
	var head struct{ APIVersion, Kind string }
	require.NoError(t, json.Unmarshal(doc, &head))
	return head.APIVersion, head.Kind
}

// MixedStream is one file of resources of every kube target, as a Helm
// chart renders them: each reader takes its own and leaves the rest.
const MixedStream = `# Source: shop/templates/mesh.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: books
  annotations:
    linkerd.io/inject: enabled
spec: {}
---
apiVersion: v1
kind: Service
metadata:
  name: books
  namespace: shop
  annotations:
    timeout.linkerd.io/request: 3s
    retry.linkerd.io/http: gateway-error
spec:
  ports:
  - port: 7002
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: books
  namespace: shop
spec:
  hosts:
  - books
  http:
  - timeout: 2s
    route:
    - destination:
        host: books
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: books
  namespace: shop
spec:
  host: books
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: books-create
  namespace: shop
  annotations:
    retry.linkerd.io/http: "5xx"
    retry.linkerd.io/limit: "2"
spec:
  parentRefs:
  - group: ""
    kind: Service
    name: books
    port: 7002
  rules:
  - matches:
    - path:
        type: Exact
        value: /books.json
      method: POST
    timeouts:
      request: 1500ms
---
apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata:
  name: authors.shop.svc.cluster.local
  namespace: shop
spec:
  routes:
  - name: GET /authors.json
    condition:
      method: GET
      pathRegex: /authors\.json
    timeout: 300ms
`

// HasNote reports whether a note of o holds part.
func HasNote(o target.Object, part string) bool {
	for _, n := range o.Notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// MustRead reads data with a reader, which must take it, and holds its
// objects to the lines of data.
func MustRead(t *testing.T, read func(string, []byte, target.Opener, *budget.Budget) ([]target.Object, error), file, data string) []target.Object {
	t.Helper()
	objs, err := read(file, []byte(data), nil, nil)
	require.NoError(t, err)
	RequireInside(t, file, []byte(data), objs)
	return objs
}
