package targets

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	envoytarget "github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/gatewayapi"
	grpctarget "github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/istio"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
	yaml "go.yaml.in/yaml/v3"
)

const nodeBudgetErr = "YAML nodes with aliases expanded: over the node budget of one run, 1,048,576 nodes in all"

// TestYAMLAliasBombs: the bomb of issue 30 in the form each YAML reader
// reads. Before one targettest.Bounded decoding path served them all, the
// resilience4j reader took more than 6 GB on the 486-byte file and the
// Kubernetes List took 4.9 GB.
func TestYAMLAliasBombs(t *testing.T) {
	r4j := targettest.AliasBomb("", 9, 9, "lol")
	require.Len(t, r4j, 486)
	r4j += "resilience4j.retry.instances.a.maxAttempts: 3\n"
	// A List of Lists of one VirtualService, each an alias list 60 wide:
	// 216,000 VirtualServices from a kilobyte.
	var list strings.Builder
	list.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	list.WriteString("- &v0 {apiVersion: networking.istio.io/v1, kind: VirtualService, metadata: {name: r}, spec: {hosts: [r], http: [{timeout: 1s, route: [{destination: {host: r}}]}]}}\n")
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&list, "- &v%d {apiVersion: v1, kind: List, items: [%s]}\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*v%d, ", i-1), 60), ", "))
	}
	envoy := targettest.AliasBomb("", 9, 9, "{name: v, domains: ['*'], routes: [{match: {prefix: /}, route: {cluster: c}}]}") +
		"name: rc\nvirtual_hosts: *a8\n"
	grpc := `{"methodConfig": [{"name": [{"service": "s"}], "timeout": "1s"}], "x": ` + strings.Repeat("[", 1) + `"a"]}`
	tests := []struct {
		name, file, data string
		read             func(string, []byte, target.Opener, *budget.Budget) ([]target.Object, error)
		line             int
	}{
		{"resilience4j", "application.yml", r4j, resilience4j.ReadConfig, 1},
		{"resilience4j without a name", "-", r4j, resilience4j.ReadConfig, 1},
		{"istio in a List", "vs.yaml", list.String(), istio.ReadConfig, 1},
		{"gateway-api in a List", "vs.yaml", strings.ReplaceAll(list.String(), "networking.istio.io/v1, kind: VirtualService", "gateway.networking.k8s.io/v1, kind: HTTPRoute"), gatewayapi.ReadConfig, 1},
		{"linkerd in a List", "vs.yaml", strings.ReplaceAll(list.String(), "networking.istio.io/v1, kind: VirtualService", "policy.linkerd.io/v1beta3, kind: HTTPRoute"), linkerd.ReadConfig, 1},
		{"envoy", "rc.yaml", envoy, envoytarget.ReadConfig, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []target.Object
			err := targettest.Bounded(t, 64, func() (err error) {
				objs, err = tt.read(tt.file, []byte(tt.data), nil, budget.New())
				return err
			})
			require.Error(t, err, "%d objects", len(objs))
			assert.True(t, errors.Is(err, budget.ErrSpent), "%v", err)
			assert.Equal(t, fmt.Sprintf("%s:%d: %s", tt.file, tt.line, nodeBudgetErr), err.Error())
		})
	}
	// The gRPC service config is JSON: no aliases, but the same path.
	_, err := grpctarget.ReadConfig("sc.json", []byte(grpc), nil, nil)
	require.NoError(t, err)
}

// TestYAMLBudgetIsTheRuns: the budget is shared by the files of a run; a
// file under it alone passes it with the others.
func TestYAMLBudgetIsTheRuns(t *testing.T) {
	// 600,000 nodes with aliases expanded: a mapping of two scalars named
	// 200,000 times.
	file := "x: &m {a: b}\nitems: [" + strings.TrimSuffix(strings.Repeat("*m,", 200_000), ",") + "]\nstatic_resources: {}\n"
	b := budget.New()
	_, err := envoytarget.ReadConfig("one.yaml", []byte(file), nil, b)
	require.NoError(t, err)
	// The document, its mapping, three keys, x's mapping of two, the
	// list, 200,000 times three, and the empty mapping: 600,010.
	assert.EqualValues(t, 1<<20-600_010, b.NodesLeft(), "the nodes of the first file with aliases expanded")
	_, err = envoytarget.ReadConfig("two.yaml", []byte(file), nil, b)
	assert.EqualError(t, err, "two.yaml:1: "+nodeBudgetErr)
	_, err = envoytarget.ReadConfig("two.yaml", []byte(file), nil, nil)
	assert.NoError(t, err, "alone, the second file is under the budget")
}

// TestYAMLRefusedBeforeDecoding: a file of more words than the nodes left
// is refused before yaml.v3 builds its nodes (some 180 bytes each: 16 MiB
// of "0," took 1.3 GB before).
func TestYAMLRefusedBeforeDecoding(t *testing.T) {
	data := []byte("connect_timeout: 1s\nx: [" + strings.Repeat("0,", 8<<20-16) + "0]\n")
	err := targettest.Bounded(t, 1, func() error {
		_, err := envoytarget.ReadConfig("flat.yaml", data, nil, nil)
		return err
	})
	// "connect_timeout:", "1s", "x:", "[" and 8,388,593 zeros.
	assert.EqualError(t, err, "flat.yaml:1: 8,388,597 words of YAML, before decoding: over the node budget of one run, 1,048,576 nodes in all")
	assert.True(t, errors.Is(err, budget.ErrSpent))
}

// TestYAMLAliasCycle: an alias inside its own anchor would repeat for
// ever; it is refused where it stands.
func TestYAMLAliasCycle(t *testing.T) {
	_, err := envoytarget.ReadConfig("c.yaml", []byte("static_resources:\n  clusters: &a\n  - name: c\n    x: *a\n"), nil, nil)
	assert.EqualError(t, err, "c.yaml:4: the alias *a stands inside its own anchor: it would repeat for ever")
	_, err = resilience4j.ReadConfig("application.yml", []byte("a: &x {b: *x}\n"), nil, nil)
	assert.EqualError(t, err, "application.yml:1: the alias *x stands inside its own anchor: it would repeat for ever")
}

// TestYAMLAliasBytes: aliases of a long value repeat its bytes: they count
// against the byte budget.
func TestYAMLAliasBytes(t *testing.T) {
	data := "x: &v " + strings.Repeat("a", 1<<20) + "\nvirtual_hosts: [" + strings.TrimSuffix(strings.Repeat("*v,", 100), ",") + "]\n"
	_, err := envoytarget.ReadConfig("rc.yaml", []byte(data), nil, nil)
	assert.EqualError(t, err, "rc.yaml:1: values YAML aliases repeat: over the byte budget of one run, 64 MiB in all")
}

// FuzzYAMLWordCount holds the bound target.YAMLDocuments relies on to refuse a
// file before decoding it: a stream decodes to at most 3 nodes a word, and
// one more.
func FuzzYAMLWordCount(f *testing.F) {
	for _, s := range []string{"a:\nb:\nc:\n", "? \n? \n", "[[[[]]]]", "{a, b, c}", `["a":"b","c":"d"]`, "- - - -\n", "a: &x [*x]\n", "0,0,0", "---\n---\n", "--- |\n  text\n", "!!map {}", "{? }"} {
		f.Add([]byte(s))
	}
	// Issue 30: the alias bomb, whose words are few and whose nodes after
	// expansion are many; the count is of the text, before expansion.
	f.Add([]byte(targettest.AliasBomb("", 9, 9, "lol")))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<12 {
			return
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		var nodes int64
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				break
			}
			nodes += literalNodes(&n)
		}
		if w := target.YAMLWordCount(data); nodes > 3*w+1 {
			t.Fatalf("%d nodes from %d words: %q", nodes, w, data)
		}
	})
}

// literalNodes counts the nodes as decoded, aliases not followed.
func literalNodes(n *yaml.Node) int64 {
	c := int64(1)
	for _, k := range n.Content {
		c += literalNodes(k)
	}
	return c
}

func TestUniqueNames(t *testing.T) {
	var u target.UniqueNames
	alt := func(n string) func(int) string { return func(i int) string { return fmt.Sprintf("%s-%d", n, i) } }
	var got []string
	for _, n := range []string{"a", "a-2", "a", "a", "b", "a-3", "a"} {
		got = append(got, u.Name(n, alt(n)))
	}
	assert.Equal(t, []string{"a", "a-2", "a-3", "a-4", "b", "a-3-2", "a-5"}, got)
}
