package targets

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/grpc"
	"go.yaml.in/yaml/v3"
)

// retriesOffNote returns the header line of a snippet that says how to
// turn its retries off, failing the test when there is none.
func retriesOffNote(t *testing.T, name string, f struct {
	name, report string
	opts         target.Options
	only         string
}) string {
	t.Helper()
	tg, err := Lookup(name)
	require.NoError(t, err)
	notes, err := tg.Explain(loadReport(t, f.report), f.opts)
	require.NoError(t, err)
	var found []string
	for _, n := range notes {
		if strings.HasPrefix(n, "Retries off during an incident") {
			found = append(found, n)
		}
	}
	require.Len(t, found, 1, "%s %s: one header line says how to turn retries off\n%s", f.name, name, strings.Join(notes, "\n"))
	return found[0]
}

// TestRetriesOffEveryTarget: every name's header says how to turn its
// retries off during an incident (issue 34, item 4), for every fixture.
func TestRetriesOffEveryTarget(t *testing.T) {
	for _, f := range fixtures {
		for _, name := range Names() {
			if f.only != "" && f.only != name {
				continue
			}
			note := retriesOffNote(t, name, f)
			assert.NotContains(t, note, "%!", "%s %s: a format verb without its value", f.name, name)
		}
	}
}

// decodeYAMLDocs decodes every document of a YAML stream.
func decodeYAMLDocs(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, d)
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

// dig follows keys (strings) and indexes (ints) into a decoded document.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func asInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return -1
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
			func(r any) bool { return asInt(dig(r, "retries", "attempts")) != 0 }},
		{"istio", "deadline", "virtualservice.networking.istio.io", "VirtualService", []any{"spec", "http"},
			func(r any) bool { return asInt(dig(r, "retries", "attempts")) != 0 }},
		{"gateway-api", "policy", "httproute.gateway.networking.k8s.io", "HTTPRoute", []any{"spec", "rules"},
			func(r any) bool { return asInt(dig(r, "retry", "attempts")) != 0 }},
		{"gateway-api", "deadline", "httproute.gateway.networking.k8s.io", "HTTPRoute", []any{"spec", "rules"},
			func(r any) bool { return asInt(dig(r, "retry", "attempts")) != 0 }},
		{"linkerd", "deadline-serviceprofile", "serviceprofile.linkerd.io", "ServiceProfile", []any{"spec", "routes"},
			func(r any) bool { return dig(r, "isRetryable") == true }},
	}
	for _, c := range cases {
		t.Run(c.target+"/"+c.fixture, func(t *testing.T) {
			var f = fixtures[0]
			for _, x := range fixtures {
				if x.name == c.fixture {
					f = x
				}
			}
			body, err := Render(c.target, loadReport(t, f.report), f.opts)
			require.NoError(t, err)
			docs := decodeYAMLDocs(t, body)
			count := func() (n int) {
				for _, d := range docs {
					if d["kind"] != c.kind {
						continue
					}
					routes, _ := dig(d, c.routes...).([]any)
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
			patches := kubectlPatches(t, retriesOffNote(t, c.target, f))
			require.NotEmpty(t, patches)
			for _, p := range patches {
				assert.Equal(t, c.resource, p.resource)
				var target map[string]any
				for _, d := range docs {
					if d["kind"] == c.kind && dig(d, "metadata", "name") == p.name && dig(d, "metadata", "namespace") == p.ns {
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

// TestRetriesOffLinkerdAnnotate removes the annotations the Linkerd
// header names from the routes it wrote: afterwards no route has a retry
// condition, and every one that retried keeps retry.linkerd.io/limit (so
// its annotations still override the Service's).
func TestRetriesOffLinkerdAnnotate(t *testing.T) {
	for _, f := range fixtures {
		if f.name != "policy" && f.name != "deadline" {
			continue
		}
		body, err := Render("linkerd", loadReport(t, f.report), f.opts)
		require.NoError(t, err)
		docs := decodeYAMLDocs(t, body)
		note := retriesOffNote(t, "linkerd", f)
		re := regexp.MustCompile(`kubectl annotate -n (\S+) httproute\.policy\.linkerd\.io/(\S+)((?: retry\.linkerd\.io/\S+-)+)`)
		cmds := re.FindAllStringSubmatch(note, -1)
		require.NotEmpty(t, cmds, "%s: %s", f.name, note)
		for _, m := range cmds {
			var ann map[string]any
			for _, d := range docs {
				if d["kind"] == "HTTPRoute" && dig(d, "metadata", "name") == m[2] && dig(d, "metadata", "namespace") == m[1] {
					ann, _ = dig(d, "metadata", "annotations").(map[string]any)
				}
			}
			require.NotNil(t, ann, "%s: no HTTPRoute %s/%s", f.name, m[1], m[2])
			for _, k := range strings.Fields(m[3]) {
				delete(ann, strings.TrimSuffix(k, "-"))
			}
			assert.Contains(t, ann, "retry.linkerd.io/limit", "%s %s", f.name, m[2])
		}
		for _, d := range docs {
			ann, _ := dig(d, "metadata", "annotations").(map[string]any)
			for _, k := range []string{"retry.linkerd.io/http", "retry.linkerd.io/grpc", "retry.linkerd.io/timeout"} {
				assert.NotContains(t, ann, k, "%s: route %v still retries", f.name, dig(d, "metadata", "name"))
			}
		}
	}
}

// TestRetriesOffEnvoyRuntime: the runtime keys the Envoy header sets name
// the cluster the snippet wrote and its default priority, the retry
// budget's settings where the cluster has a budget (which replaces
// max_retries), max_retries where it has none.
func TestRetriesOffEnvoyRuntime(t *testing.T) {
	for _, f := range fixtures[:3] {
		body, err := Render("envoy", loadReport(t, f.report), f.opts)
		require.NoError(t, err)
		docs := decodeYAMLDocs(t, body)
		require.Len(t, docs, 2)
		cluster := docs[1]
		name, _ := cluster["name"].(string)
		note := retriesOffNote(t, "envoy", f)
		m := regexp.MustCompile(`runtime_modify\?([^' ]+)'`).FindStringSubmatch(note)
		require.NotNil(t, m, note)
		var keys []string
		for _, kv := range strings.Split(m[1], "&") {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, kv)
			assert.Equal(t, "0", v, kv)
			keys = append(keys, k)
		}
		prefix := "circuit_breakers." + name + ".default."
		want := []string{prefix + "max_retries"}
		if dig(cluster, "circuit_breakers", "thresholds", 0, "retry_budget") != nil {
			want = []string{prefix + "retry_budget.budget_percent", prefix + "retry_budget.min_retry_concurrency"}
		}
		assert.Equal(t, want, keys, f.name)
	}
}

// TestRetriesOffResilience4j: the SPRING_APPLICATION_JSON of the header
// is JSON, and sets maxAttempts 1 for exactly the retry instances that
// make more than one attempt.
func TestRetriesOffResilience4j(t *testing.T) {
	f := fixtures[1] // policy: instances with and without retries
	require.Equal(t, "policy", f.name)
	body, err := Render("resilience4j", loadReport(t, f.report), f.opts)
	require.NoError(t, err)
	docs := decodeYAMLDocs(t, body)
	require.Len(t, docs, 1)
	retrying := map[string]any{}
	insts, _ := dig(docs[0], "resilience4j", "retry", "instances").(map[string]any)
	for name, inst := range insts {
		if asInt(dig(inst, "maxAttempts")) > 1 {
			retrying[name] = map[string]any{"maxAttempts": 1.0}
		}
	}
	require.NotEmpty(t, retrying, "precondition: some instance retries\n%s", body)
	note := retriesOffNote(t, "resilience4j", f)
	m := regexp.MustCompile(`SPRING_APPLICATION_JSON='([^']*)'`).FindStringSubmatch(note)
	require.NotNil(t, m, note)
	var props map[string]any
	require.NoError(t, json.Unmarshal([]byte(m[1]), &props), m[1])
	assert.Equal(t, retrying, dig(props, "resilience4j", "retry", "instances"))
	for name := range retrying {
		assert.Contains(t, note, name)
	}
}

// TestRetriesOffGRPCJq runs the gRPC header's jq program on the config:
// the result is a service config with the same method configs and
// timeouts, and no retryPolicy or hedgingPolicy left.
func TestRetriesOffGRPCJq(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("no jq (apt-get install jq)")
	}
	for _, f := range fixtures[1:3] {
		body, err := Render("grpc", loadReport(t, f.report), f.opts)
		require.NoError(t, err)
		require.Contains(t, string(body), "Policy", "precondition: a method retries or hedges")
		note := retriesOffNote(t, "grpc", f)
		m := regexp.MustCompile(`jq '([^']*)' grpc\.json`).FindStringSubmatch(note)
		require.NotNil(t, m, note)
		cmd := exec.Command(jq, m[1])
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.Output()
		require.NoError(t, err)
		var before, after grpc.Config
		require.NoError(t, json.Unmarshal(body, &before))
		require.NoError(t, json.Unmarshal(out, &after))
		require.Len(t, after.MethodConfig, len(before.MethodConfig))
		for i, mc := range after.MethodConfig {
			assert.Nil(t, mc.RetryPolicy, f.name)
			assert.Nil(t, mc.HedgingPolicy, f.name)
			assert.Equal(t, before.MethodConfig[i].Timeout, mc.Timeout)
			assert.Equal(t, before.MethodConfig[i].Name, mc.Name)
		}
	}
}
