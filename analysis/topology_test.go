package analysis

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// The three hops of testdata/check/chain.yaml multiply: Envoy's 3
// attempts x gRPC's 3 x Istio's default 3 (a route without retries) are
// 27 at the bottom, each layer named at its file and line.
func TestCheckTopologyMultipliesAlongThePath(t *testing.T) {
	topo, err := ReadTopology(filepath.Join("testdata", "check", "chain.yaml"))
	require.NoError(t, err)
	o := checkOptions()
	o.Topology = topo
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	fs := findingsOf(c, finding.CheckRetryLayers)
	require.Len(t, fs, 1, "%v", c.Findings)
	f := fs[0]
	assert.EqualValues(t, 27, f.Measured["attempts_at_bottom"])
	assert.EqualValues(t, 3, f.Measured["layers"])
	assert.Equal(t, "edge -> orders -> payments -> payments-db", f.Measured["path"])
	envoy := filepath.Join("testdata", "check", "envoy-3-attempts.yaml")
	assert.Equal(t, envoy, f.File)
	assert.Equal(t, 24, f.Line, "num_retries")
	assert.Contains(t, f.Message, "3 (local_route/backend/route 1, "+envoy+":24) x 3 (shop.Orders, "+
		filepath.Join("testdata", "check", "grpc-3-attempts.json")+":6) x 3 (payments http[0], "+
		filepath.Join("testdata", "check", "istio-no-retries.yaml")+":9, unset: istio's default) make up to 27 attempts")
	// Under a hang at the bottom, each of Envoy's 800ms tries reaches it
	// once: gRPC's and Istio's single attempts last their whole timeouts
	// (simulate.ChainHang). Retrying at Envoy only: 3 either way.
	assert.EqualValues(t, 3, f.Measured["hang_attempts_at_bottom"])
	assert.EqualValues(t, 3, f.Measured["hang_attempts_at_bottom_uncancelled"])
	assert.EqualValues(t, 0, f.Measured["hang_after_root_gave_up"])
	assert.EqualValues(t, 3, f.Measured["one_layer_attempts_at_bottom"])
	assert.EqualValues(t, 3, f.Measured["one_layer_hang_attempts_at_bottom"])
	// The topology's configs are checked as if named on the command line.
	assert.Len(t, c.Configs, 3)
}

// Configs on different paths do not multiply: two chains side by side,
// each with one retrying layer, make no finding; the same configs as one
// --chain do.
func TestCheckTopologySeparatePaths(t *testing.T) {
	dir := filepath.Join("testdata", "check")
	topo, err := parseTopology("two.yaml", dir, []byte(`services:
  edge:
    configs: [envoy-3-attempts.yaml]
    calls: [orders]
  batch:
    configs: [grpc-3-attempts.json]
    calls: [orders]
  orders:
`))
	require.NoError(t, err)
	o := checkOptions()
	o.Topology = topo
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckRetryLayers))
	assert.Len(t, topo.Paths(100), 2)

	chain := checkOptions("envoy-3-attempts.yaml", "grpc-3-attempts.json")
	chain.Chain = true
	c, err = Check(context.Background(), chain, nil)
	require.NoError(t, err)
	fs := findingsOf(c, finding.CheckRetryLayers)
	require.Len(t, fs, 1)
	assert.EqualValues(t, 9, fs[0].Measured["attempts_at_bottom"])
}

func TestTopologyPaths(t *testing.T) {
	topo, err := parseTopology("t.yaml", ".", []byte(`services:
  a: {calls: [b, c]}
  b: {calls: [d]}
  c: {calls: [d, a]}
  d:
`))
	require.NoError(t, err)
	var got [][]string
	for _, p := range topo.Paths(100) {
		var names []string
		for _, i := range p {
			names = append(names, topo.Services[i].Name)
		}
		got = append(got, names)
	}
	// Everyone is called (c -> a closes a cycle): the walk starts at the
	// file's first service, and the cycle is broken.
	assert.Equal(t, [][]string{{"a", "b", "d"}, {"a", "c", "d"}}, got)
	assert.Len(t, topo.Paths(1), 1, "bounded")
}

func TestTopologyErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"unknown callee", "services:\n  a:\n    calls: [b]\n", "t.yaml:2: service \"a\" calls \"b\", which is not under services:"},
		{"unknown key", "services:\n  a:\n    config: [x]\n", "t.yaml:3: service \"a\": unknown key \"config\" (want configs, calls)"},
		{"top key", "servicez:\n  a:\n", "t.yaml:1: unknown key \"servicez\""},
		{"twice", "services:\n  a:\n  a:\n", "t.yaml:3: service \"a\" is named twice (first at line 2)"},
		{"alias", "services:\n  a: &x {calls: []}\n  b: *x\n", "t.yaml:3: a YAML alias (*x)"},
		{"not a list", "services:\n  a:\n    calls: {b: 1}\n", "t.yaml:3: service \"a\", calls: want a list of names, not a mapping"},
		{"empty", "", "t.yaml: empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTopology("t.yaml", ".", []byte(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, maxTopologyBytes+1), 0o644))
	_, err := ReadTopology(big)
	assert.ErrorContains(t, err, "a topology of more than")
}

// FuzzParseTopology: any bytes give a topology or an error naming the
// file, never a panic; a topology's callees are all its services, and its
// paths walk only the calls it lists.
func FuzzParseTopology(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "check", "chain.yaml"))
	require.NoError(f, err)
	f.Add(seed)
	f.Add([]byte("services:\n  a: {calls: [b, a]}\n  b: {calls: [a]}\n"))
	f.Add([]byte("services:\n  a: &x {calls: []}\n  b: *x\n"))
	f.Add([]byte("services: [1, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := parseTopology("t.yaml", "dir", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "t.yaml") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		names := map[string]bool{}
		for _, s := range topo.Services {
			names[s.Name] = true
		}
		for _, s := range topo.Services {
			for _, c := range s.Calls {
				if !names[c] {
					t.Fatalf("service %q calls %q, not a service", s.Name, c)
				}
			}
		}
		for _, p := range topo.Paths(100) {
			for k := 1; k < len(p); k++ {
				if !slices.Contains(topo.Services[p[k-1]].Calls, topo.Services[p[k]].Name) {
					t.Fatalf("a path steps from %q to %q, which it does not call", topo.Services[p[k-1]].Name, topo.Services[p[k]].Name)
				}
			}
		}
	})
}

// Along a topology's path, a callee whose configs wait at least as long
// as its caller waits for it is an inversion, at the callee's value; the
// chain of testdata/check/chain.yaml narrows (2.5s, 2s, 1s) and has none.
func TestCheckTopologyInversion(t *testing.T) {
	dir := filepath.Join("testdata", "check")
	topo, err := parseTopology("inv.yaml", dir, []byte(`services:
  edge:
    configs: [envoy-250ms.yaml]
    calls: [orders]
  orders:
    configs: [grpc-3-attempts.json]
`))
	require.NoError(t, err)
	o := checkOptions()
	o.Topology = topo
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	fs := findingsOf(c, finding.CheckTimeoutInversion)
	require.Len(t, fs, 1, "%v", c.Findings)
	assert.Equal(t, filepath.Join(dir, "grpc-3-attempts.json"), fs[0].File)
	assert.Equal(t, 4, fs[0].Line, "the gRPC timeout")
	assert.InDelta(t, 0.25, fs[0].Measured["caller_wait_seconds"], 1e-9)
	assert.InDelta(t, 2.0, fs[0].Measured["callee_wait_seconds"], 1e-9)
	assert.Contains(t, fs[0].Message, "edge waits at most 250ms for orders (local_route/backend/route 1, "+filepath.Join(dir, "envoy-250ms.yaml")+":21), but orders waits 2s")

	topo, err = ReadTopology(filepath.Join(dir, "chain.yaml"))
	require.NoError(t, err)
	o.Topology = topo
	c, err = Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckTimeoutInversion))
}
