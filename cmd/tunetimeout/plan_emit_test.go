package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// writeChainSpans writes, as OTLP JSON lines, the lesson's chain that
// TestOTLPDeadlineDownTheChain (e2e/otlp_test.go) builds with the SDK:
// 1,000 requests, each a gateway SERVER span with a CLIENT call to
// frontend at once, frontend's to orders after 30ms and orders' to
// payments (not traced) after 160ms more; request 500 waits 900ms in the
// gateway's queue first. names renames the services (a hostile name);
// with fanOut frontend also calls inventory (not traced), after orders.
func writeChainSpans(t *testing.T, path string, names map[string]string, fanOut ...bool) {
	t.Helper()
	name := func(s string) string {
		if n, ok := names[s]; ok {
			s = n
		}
		q, err := json.Marshal(s)
		require.NoError(t, err)
		return string(q)
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	span := func(svc string, trace, id, parent int, kind int, peer string, start, end time.Time) {
		par := ""
		if parent != 0 {
			par = fmt.Sprintf(`"parentSpanId":"%016x",`, parent)
		}
		attrs := ""
		if peer != "" {
			attrs = fmt.Sprintf(`,"attributes":[{"key":"peer.service","value":{"stringValue":%s}}]`, name(peer))
		}
		fmt.Fprintf(w, `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%s}}]},"scopeSpans":[{"spans":[{"traceId":"%032x","spanId":"%016x",%s"name":"span","kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"%s}]}]}]}`+"\n",
			name(svc), trace, id, par, kind, start.UnixNano(), end.UnixNano(), attrs)
	}
	const server, client = 2, 3
	for i := range 1000 {
		tr := i + 1
		s := base.Add(time.Duration(i) * 2 * time.Second)
		q := time.Duration(0)
		if i == 500 {
			q = ms(900)
		}
		span("gateway", tr, 1, 0, server, "", s, s.Add(q+ms(310)))
		span("gateway", tr, 2, 1, client, "frontend", s.Add(q), s.Add(q+ms(300+i%7)))
		span("frontend", tr, 3, 2, server, "", s.Add(q), s.Add(q+ms(300+i%7)))
		span("frontend", tr, 4, 3, client, "orders", s.Add(q+ms(30)), s.Add(q+ms(290)))
		span("orders", tr, 5, 4, server, "", s.Add(q+ms(30)), s.Add(q+ms(290)))
		span("orders", tr, 6, 5, client, "payments", s.Add(q+ms(190)), s.Add(q+ms(240+i%5)))
		if len(fanOut) > 0 && fanOut[0] {
			span("frontend", tr, 7, 3, client, "inventory", s.Add(q+ms(291)), s.Add(q+ms(299-i%3)))
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
}

// checkChain runs check --topology topo --data spans and returns its
// report.
func checkChain(t *testing.T, topo, spans string) report.Check {
	t.Helper()
	out, errOut, code := execute(t, "", "check", "--topology", topo, "--data", spans, "-q", "--fail-on", "never", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var c report.Check
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	return c
}

func checkCodes(c report.Check, code string) []report.CheckFinding {
	var out []report.CheckFinding
	for _, f := range c.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// readBack reads a snippet file with check's reader of its target and
// returns the object of group (its name ends with the group), as check
// holds it: the attempts (1 when unset) and the timeout over the call.
func readBack(t *testing.T, name, file, group string) (attempts int, timeout float64) {
	t.Helper()
	tg, err := targets.Lookup(name)
	require.NoError(t, err)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	objs, err := tg.Read(file, data, nil)
	require.NoError(t, err)
	for _, ob := range objs {
		if strings.HasSuffix(ob.Name, "/"+group) {
			attempts = 1
			if ob.Attempts != nil {
				attempts = ob.Attempts.Value
			}
			require.NotNil(t, ob.Timeout, ob.Name)
			return attempts, ob.Timeout.Value
		}
	}
	t.Fatalf("%s: no object of group %q in %v", file, group, objs)
	return 0, 0
}

// TestPlanEmitDir: analyze --plan --emit-dir on the lesson's chain writes
// each edge's snippets under its caller and callee, each with the plan's
// attempts and a timeout within the edge's deadline, and a topology with
// which check reads the plan's own snippets as the chain: one layer
// retries (3 attempts at the bottom per request, not 27), and no
// inversion, for every target check reads. Today's configs of the same
// chain (testdata/check/chain.yaml's three: Envoy 3 attempts, gRPC 3,
// Istio without retries) over the same spans: 27.
func TestPlanEmitDir(t *testing.T) {
	tmp := t.TempDir()
	spans := filepath.Join(tmp, "chain.jsonl")
	writeChainSpans(t, spans, nil)
	edges := [][2]string{{"gateway", "frontend"}, {"frontend", "orders"}, {"orders", "payments"}}
	// The planned deadlines: what each edge's calls have left of 1s at
	// p99.9 (the e2e test TestOTLPDeadlineDownTheChain pins them).
	deadline := map[string]float64{"gateway frontend": 1, "frontend orders": 0.97, "orders payments": 0.81}
	for _, tc := range []struct {
		retryAt string
		// each edge's Envoy route: attempts and timeout over the call
		// (the deadline with retries, the recommended timeout with one
		// attempt: within the deadline)
		want map[string][2]float64
	}{
		{"outermost", map[string][2]float64{"gateway frontend": {3, 1}, "frontend orders": {1, 0.55}, "orders payments": {1, 0.11}}},
		// orders' retries within what frontend's one call of 550ms leaves
		// after orders' own 160ms (390ms), not the 810ms the root's
		// deadline leaves: frontend would have given up by then.
		{"innermost", map[string][2]float64{"gateway frontend": {1, 0.65}, "frontend orders": {1, 0.55}, "orders payments": {3, 0.39}}},
	} {
		t.Run(tc.retryAt, func(t *testing.T) {
			dir := filepath.Join(tmp, tc.retryAt)
			_, errOut, code := execute(t, "", "analyze", spans, "-q", "--deadline", "1s", "--attempts", "3", "--plan", "--retry-at", tc.retryAt,
				"--emit-dir", dir, "-o", "json", "--output", filepath.Join(tmp, tc.retryAt+".json"))
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, errOut, "Wrote the plan's snippets of 3 edges to "+dir)
			bottom := 1
			for _, e := range edges {
				group := e[0] + " " + e[1]
				folder := filepath.Join(dir, e[0], e[1])
				for _, tg := range targets.All {
					assert.FileExists(t, filepath.Join(folder, tg.File))
				}
				attempts, timeout := readBack(t, "envoy", filepath.Join(folder, "envoy.yaml"), group)
				assert.Equal(t, int(tc.want[group][0]), attempts, group)
				assert.InDelta(t, tc.want[group][1], timeout, 1e-9, group)
				assert.LessOrEqual(t, timeout, deadline[group], "%s: within the edge's deadline", group)
				bottom *= attempts
			}
			assert.Equal(t, 3, bottom, "attempts at the bottom per request when it fails fast: one layer of 3")
			// The saved report renders the same folder.
			again := filepath.Join(tmp, tc.retryAt+"-again")
			_, errOut, code = execute(t, "", "snippet", "--report", filepath.Join(tmp, tc.retryAt+".json"), "--emit-dir", again, "--emit", "envoy,grpc")
			require.Equal(t, 0, code, errOut)
			for _, f := range []string{"orders/payments/envoy.yaml", "gateway/frontend/grpc.json"} {
				want, err := os.ReadFile(filepath.Join(dir, f))
				require.NoError(t, err)
				got, err := os.ReadFile(filepath.Join(again, f))
				require.NoError(t, err)
				assert.Equal(t, string(want), string(got), f)
			}
			assert.NoFileExists(t, filepath.Join(again, "gateway", "frontend", "go.go"), "--emit says which targets")
			topo := filepath.Join(dir, "topology.yaml")
			text, err := os.ReadFile(topo)
			require.NoError(t, err)
			assert.Contains(t, string(text), "  \"frontend\":\n    configs: [\"frontend/orders/envoy.yaml\"]\n    calls: [\"orders\"]\n")
			layer := map[string]string{"outermost": "gateway -> frontend", "innermost": "orders -> payments"}[tc.retryAt]
			assert.Contains(t, string(text), "(retries at the "+tc.retryAt+" layer only: "+layer+")")
			// Every target check reads, named in the topology in turn.
			for _, tg := range targets.All {
				if !tg.Reads() {
					continue
				}
				one := filepath.Join(dir, "topology-"+tg.Name+".yaml")
				require.NoError(t, os.WriteFile(one, []byte(strings.ReplaceAll(string(text), "/envoy.yaml", "/"+tg.File)), 0o644))
				c := checkChain(t, one, spans)
				assert.Empty(t, c.UnmatchedGroups, "%s: every edge's calls are held against its hop's config", tg.Name)
				assert.Len(t, c.Configs, 3, tg.Name)
				assert.Empty(t, checkCodes(c, "TT-CHECK-RETRY-LAYERS"), "%s: retries at one layer", tg.Name)
				assert.Empty(t, checkCodes(c, "TT-CHECK-TIMEOUT-INVERSION"), "%s", tg.Name)
			}
		})
	}

	// Today's configs of the same chain over the same spans.
	today := filepath.Join(tmp, "today.yaml")
	abs, err := filepath.Abs(checkData)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(today, []byte(fmt.Sprintf(`services:
  gateway:
    configs: [%[1]s/envoy-3-attempts.yaml]
    calls: [frontend]
  frontend:
    configs: [%[1]s/grpc-3-attempts.json]
    calls: [orders]
  orders:
    configs: [%[1]s/istio-no-retries.yaml]
    calls: [payments]
  payments:
`, abs)), 0o644))
	c := checkChain(t, today, spans)
	assert.Empty(t, c.UnmatchedGroups)
	layers := checkCodes(c, "TT-CHECK-RETRY-LAYERS")
	require.Len(t, layers, 1)
	assert.EqualValues(t, 27, layers[0].Measured["attempts_at_bottom"])
	assert.EqualValues(t, 3, layers[0].Measured["one_layer_attempts_at_bottom"])
	assert.Equal(t, "gateway -> frontend -> orders -> payments", layers[0].Measured["path"])
}

// TestPlanEmitDirHostileNames: service names from the spans make folder
// names that stay under --emit-dir and hold no control character; two
// names one case-insensitive file system would merge get two folders,
// the change said; the topology keeps the data's names (quoted), so check
// still joins each hop's config to its edge.
func TestPlanEmitDirHostileNames(t *testing.T) {
	tmp := t.TempDir()
	spans := filepath.Join(tmp, "chain.jsonl")
	evil := "../../evil\x1b[31m"
	writeChainSpans(t, spans, map[string]string{"frontend": evil, "orders": "Payments"})
	dir := filepath.Join(tmp, "out")
	_, errOut, code := execute(t, "", "analyze", spans, "-q", "--deadline", "1s", "--attempts", "3", "--plan", "--emit-dir", dir, "-o", "json", "--output", filepath.Join(tmp, "r.json"))
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "\x1b")
	assert.Contains(t, errOut, `Service "../../evil\u001b[31m" is written as _._.._evil__31m, its name as a file name.`)
	assert.Contains(t, errOut, `Service "payments" is written as payments-2: its name as a file name, payments, is "Payments"'s.`)
	top, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range top {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"chain.jsonl", "out", "r.json"}, names, "nothing written outside --emit-dir")
	for _, f := range []string{"gateway/_._.._evil__31m/envoy.yaml", "_._.._evil__31m/Payments/envoy.yaml", "Payments/payments-2/envoy.yaml", "topology.yaml"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NotContains(t, string(data), "\x1b", path)
		}
		return nil
	}))
	topo := filepath.Join(dir, "topology.yaml")
	c := checkChain(t, topo, spans)
	assert.Empty(t, c.UnmatchedGroups)
	assert.Empty(t, checkCodes(c, "TT-CHECK-RETRY-LAYERS"))
	out, errOut, code := execute(t, "", "check", "--topology", topo, "--data", spans, "-q", "--fail-on", "never")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out+errOut, "\x1b")
}

// TestPlanEmitDirFanOut: a service that calls two services gets a folder
// per callee, both its configs in the topology, and check holds each
// config against its own edge for every target it reads.
func TestPlanEmitDirFanOut(t *testing.T) {
	tmp := t.TempDir()
	spans := filepath.Join(tmp, "chain.jsonl")
	writeChainSpans(t, spans, nil, true)
	dir := filepath.Join(tmp, "out")
	_, errOut, code := execute(t, "", "analyze", spans, "-q", "--deadline", "1s", "--attempts", "3", "--plan", "--emit-dir", dir, "-o", "json", "--output", filepath.Join(tmp, "r.json"))
	require.Equal(t, 0, code, errOut)
	text, err := os.ReadFile(filepath.Join(dir, "topology.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(text), "  \"frontend\":\n    configs: [\"frontend/inventory/envoy.yaml\", \"frontend/orders/envoy.yaml\"]\n    calls: [\"inventory\", \"orders\"]\n")
	for _, tg := range targets.All {
		if !tg.Reads() {
			continue
		}
		one := filepath.Join(dir, "topology-"+tg.Name+".yaml")
		require.NoError(t, os.WriteFile(one, []byte(strings.ReplaceAll(string(text), "/envoy.yaml", "/"+tg.File)), 0o644))
		c := checkChain(t, one, spans)
		assert.Empty(t, c.UnmatchedGroups, "%s: every edge's calls are held against its hop's config", tg.Name)
		assert.Empty(t, checkCodes(c, "TT-CHECK-RETRY-LAYERS"), tg.Name)
		assert.Empty(t, checkCodes(c, "TT-CHECK-TIMEOUT-INVERSION"), tg.Name)
		for _, f := range c.Findings {
			if f.Group != "" && strings.HasPrefix(f.File, filepath.Join(dir, "frontend", "orders")) {
				assert.Equal(t, "frontend orders", f.Group, "%s: %s", tg.Name, f.Message)
			}
		}
	}
}
