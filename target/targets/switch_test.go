package targets

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestRetriesOffEveryTarget: every name's header says how to turn its
// retries off during an incident (issue 34, item 4), for every fixture.
func TestRetriesOffEveryTarget(t *testing.T) {
	for _, f := range targettest.Fixtures {
		for _, tg := range All {
			if !f.For(tg) {
				continue
			}
			note := targettest.RetriesOffNote(t, tg, f)
			assert.NotContains(t, note, "%!", "%s %s: a format verb without its value", f.Name, tg.Name)
		}
	}
}

// applyJSONPatch applies the add and replace operations of a JSON Patch
// (RFC 6902) to doc: every step of a path must exist but the last of an
// add into an object, and replace needs its member.
func applyJSONPatch(t *testing.T, doc map[string]any, ops []target.JSONPatchOp) {
	t.Helper()
	for _, op := range ops {
		steps := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		var at any = doc
		for i, s := range steps {
			last := i == len(steps)-1
			switch v := at.(type) {
			case map[string]any:
				if last {
					if op.Op == "replace" {
						require.Contains(t, v, s, "replace %s: no member %q", op.Path, s)
					}
					v[s] = op.Value
					continue
				}
				require.Contains(t, v, s, "%s: no member %q", op.Path, s)
				at = v[s]
			case []any:
				n, err := strconv.Atoi(s)
				require.NoError(t, err, "%s: %q is no index", op.Path, s)
				require.Less(t, n, len(v), "%s: index %d of %d", op.Path, n, len(v))
				require.False(t, last, "%s: only members are set", op.Path)
				at = v[n]
			default:
				t.Fatalf("%s: %q is neither an object nor an array", op.Path, s)
			}
		}
	}
}

// kubectlPatches reads the kubectl patch commands of a note: resource,
// name, namespace and the JSON Patch, which must be well-formed JSON.
func kubectlPatches(t *testing.T, note string) (out []struct {
	resource, name, ns string
	ops                []target.JSONPatchOp
}) {
	t.Helper()
	re := regexp.MustCompile(`kubectl patch (\S+) (\S+) -n (\S+) --type=json -p '([^']*)'`)
	for _, m := range re.FindAllStringSubmatch(note, -1) {
		var ops []target.JSONPatchOp
		require.NoError(t, json.Unmarshal([]byte(m[4]), &ops), "the patch is JSON: %s", m[4])
		require.NotEmpty(t, ops)
		out = append(out, struct {
			resource, name, ns string
			ops                []target.JSONPatchOp
		}{m[1], m[2], m[3], ops})
	}
	return out
}

// TestRetriesOffKubectlPatch applies the JSON Patches that the Istio,
// Gateway API and ServiceProfile headers give to the resources the
// snippet wrote: they name those resources, their paths exist, and
// afterwards no route retries, where some did before.
func TestRetriesOffKubectlPatch(t *testing.T) {
	cases := []struct {
		target, fixture, resource, kind string
		routes                          []any                // where the routes are
		retries                         func(route any) bool // whether a route retries
	}{
		{"istio", "policy", "virtualservice.networking.istio.io", "VirtualService", []any{"spec", "http"},
			func(r any) bool { return targettest.AsInt(targettest.Dig(r, "retries", "attempts")) != 0 }},
		{"istio", "deadline", "virtualservice.networking.istio.io", "VirtualService", []any{"spec", "http"},
			func(r any) bool { return targettest.AsInt(targettest.Dig(r, "retries", "attempts")) != 0 }},
		{"gateway-api", "policy", "httproute.gateway.networking.k8s.io", "HTTPRoute", []any{"spec", "rules"},
			func(r any) bool { return targettest.AsInt(targettest.Dig(r, "retry", "attempts")) != 0 }},
		{"gateway-api", "deadline", "httproute.gateway.networking.k8s.io", "HTTPRoute", []any{"spec", "rules"},
			func(r any) bool { return targettest.AsInt(targettest.Dig(r, "retry", "attempts")) != 0 }},
		{"linkerd", "deadline-serviceprofile", "serviceprofile.linkerd.io", "ServiceProfile", []any{"spec", "routes"},
			func(r any) bool { return targettest.Dig(r, "isRetryable") == true }},
	}
	for _, c := range cases {
		t.Run(c.target+"/"+c.fixture, func(t *testing.T) {
			var f = targettest.Fixtures[0]
			for _, x := range targettest.Fixtures {
				if x.Name == c.fixture {
					f = x
				}
			}
			body, err := Render(c.target, targettest.LoadReport(t, f.Report), f.Opts)
			require.NoError(t, err)
			docs := targettest.DecodeYAMLDocs(t, body)
			count := func() (n int) {
				for _, d := range docs {
					if d["kind"] != c.kind {
						continue
					}
					routes, _ := targettest.Dig(d, c.routes...).([]any)
					for _, r := range routes {
						if c.retries(r) {
							n++
						}
					}
				}
				return n
			}
			before := count()
			require.Positive(t, before, "precondition: some route retries\n%s", body)
			tg, err := Lookup(c.target)
			require.NoError(t, err)
			patches := kubectlPatches(t, targettest.RetriesOffNote(t, tg, f))
			require.NotEmpty(t, patches)
			for _, p := range patches {
				assert.Equal(t, c.resource, p.resource)
				var target map[string]any
				for _, d := range docs {
					if d["kind"] == c.kind && targettest.Dig(d, "metadata", "name") == p.name && targettest.Dig(d, "metadata", "namespace") == p.ns {
						target = d
					}
				}
				require.NotNil(t, target, "no %s %s in namespace %s in the snippet", c.kind, p.name, p.ns)
				applyJSONPatch(t, target, p.ops)
			}
			assert.Zero(t, count(), "routes that still retry after the patches (%d before)", before)
		})
	}
}
