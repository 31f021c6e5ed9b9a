package kube_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gatewayapi"
	"github.com/tunetimeout/tunetimeout/target/internal/kube"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/istio"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
)

// Tests of the Kubernetes-manifest reading shared by the Istio, Gateway
// API and Linkerd readers.

func TestReadKubeObjects(t *testing.T) {
	stream := `# a comment before anything
---
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: bookinfo
---
# Helm's values: no apiVersion
replicaCount: 2
---
- not
- a mapping
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: books
- apiVersion: gateway.networking.k8s.io/v1
  kind: HTTPRouteList
  items:
  - apiVersion: gateway.networking.k8s.io/v1
    kind: HTTPRoute
    metadata: {name: inner}
---
{"apiVersion": "linkerd.io/v1alpha2", "kind": "ServiceProfile", "metadata": {"name": "web.ns.svc.cluster.local", "namespace": "ns"}}
`
	objs, err := kube.Objects(budget.New(), "s.yaml", []byte(stream))
	require.NoError(t, err)
	type got struct {
		group, version, kind, qualified string
		line                            int
	}
	var gots []got
	for _, o := range objs {
		gots = append(gots, got{o.Group, o.Version, o.Kind, o.Qualified(), o.Pos.Line})
	}
	assert.Equal(t, []got{
		{"networking.istio.io", "v1", "VirtualService", "bookinfo/reviews", 4},
		{"", "v1", "Service", "books", 19},
		{"gateway.networking.k8s.io", "v1", "HTTPRoute", "inner", 26},
		{"linkerd.io", "v1alpha2", "ServiceProfile", "ns/web.ns.svc.cluster.local", 30},
	}, gots)

	_, err = kube.Objects(budget.New(), "bad.yaml", []byte("apiVersion: v1\nkind: [unclosed\n"))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "bad.yaml: yaml: line "), err.Error())

	_, err = kube.Objects(budget.New(), "list.yaml", []byte("apiVersion: v1\nkind: List\nitems: 3\n"))
	require.Error(t, err)
	assert.Equal(t, "list.yaml:3: List items: want a list", err.Error())
}

// TestReadKubeGEPDuration holds GEPDuration to GEP-2257's test vectors
// (sigs.k8s.io/gateway-api geps/gep-2257) and the CRD's pattern.
func TestReadKubeGEPDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0h": 0, "0s": 0, "0h0m0s": 0, "1h": time.Hour, "30m": 30 * time.Minute, "10s": 10 * time.Second,
		"500ms": 500 * time.Millisecond, "2h30m": 150 * time.Minute, "150m": 150 * time.Minute, "7230s": 7230 * time.Second,
		"1h30m10s": time.Hour + 30*time.Minute + 10*time.Second, "10s30m1h": time.Hour + 30*time.Minute + 10*time.Second,
		"100ms200ms300ms": 600 * time.Millisecond, "01h": time.Hour, "00060m": time.Hour, "99999h": 99999 * time.Hour,
	} {
		got, err := kube.GEPDuration(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
		assert.True(t, targettest.GatewayDuration.MatchString(in), "%s: the CRD's pattern refuses it", in)
	}
	for _, in := range []string{"1", "1m1", "1d", "1h30m10s20ms50h", "999999h", "1.5h", "-15m", "", "1us", "1 s", " 1s", "1S"} {
		_, err := kube.GEPDuration(in)
		assert.Error(t, err, in)
		assert.False(t, targettest.GatewayDuration.MatchString(in), in)
	}
}

func TestReadKubeGoDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"0.5s": 500 * time.Millisecond, "1m30s": 90 * time.Second, "1h": time.Hour, "250ms": 250 * time.Millisecond, "0": 0} {
		got, err := kube.GoDuration(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"1", "-1s", "5 s", "1d", "abc", ""} {
		_, err := kube.GoDuration(in)
		assert.Error(t, err, in)
	}
}

func TestReadKubeMixedStream(t *testing.T) {
	data := []byte(targettest.MixedStream)
	want := map[string][]string{
		"istio":       {"VirtualService route shop/books http[0]", "DestinationRule shop/books"},
		"gateway-api": {"HTTPRoute rule shop/books-create rule[0]"},
		"linkerd": {"Service (Linkerd annotations) shop/books", "HTTPRoute (Linkerd annotations) shop/books-create rule[0]",
			"ServiceProfile route shop/authors.shop.svc.cluster.local GET /authors.json"},
	}
	for _, tg := range []target.Target{istio.Target, gatewayapi.Target, linkerd.Target} {
		name, names := tg.Name, want[tg.Name]
		require.True(t, tg.Detects("shop.yaml", data), name)
		objs, err := tg.Read("shop.yaml", data, nil)
		require.NoError(t, err, name)
		targettest.RequireInside(t, "shop.yaml", data, objs)
		var got []string
		for _, o := range objs {
			assert.Equal(t, name, o.Target)
			got = append(got, o.Kind+" "+o.Name)
		}
		assert.Equal(t, names, got, name)
	}
	// The same rule, seen by both: its spec's timeout is the Gateway API's,
	// its annotations Linkerd's.
	gw, _ := gatewayapi.ReadConfig("shop.yaml", data, nil, nil)
	assert.Equal(t, 1.5, gw[0].Timeout.Value)
	assert.Nil(t, gw[0].Attempts)
	lk, _ := linkerd.ReadConfig("shop.yaml", data, nil, nil)
	assert.Nil(t, lk[1].Timeout, "Linkerd does not read a gateway.networking.k8s.io rule's timeouts")
	assert.Equal(t, 3, lk[1].Attempts.Value)
	assert.Equal(t, 3.0, lk[0].Timeout.Value)
	assert.Equal(t, []string{"gateway-error"}, lk[0].RetryOn.Value)
	assert.Equal(t, 16, lk[0].Timeout.Pos.Line)
}

func TestReadKubeDetect(t *testing.T) {
	for _, c := range []struct {
		data                 string
		istio, gateway, lkrd bool
	}{
		{targettest.MixedStream, true, true, true},
		{"apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\n", true, false, false},
		{`{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute"}`, false, true, false},
		{"apiVersion: policy.linkerd.io/v1beta3\nkind: HTTPRoute\n", false, false, true},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    linkerd.io/inject: enabled\n", false, false, false},
		{"networking.istio.io/v1 without the field name\n", false, false, false},
	} {
		assert.Equal(t, c.istio, istio.Detect("x.yaml", []byte(c.data)), c.data)
		assert.Equal(t, c.gateway, gatewayapi.Detect("x.yaml", []byte(c.data)), c.data)
		assert.Equal(t, c.lkrd, linkerd.Detect("x.yaml", []byte(c.data)), c.data)
	}
}

// TestReadKubeErrorsPoint checks that the three readers refuse a value
// with the file and line of it, as a *ReadError.
func TestReadKubeErrorsPoint(t *testing.T) {
	data := []byte("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: a\nspec:\n  http:\n  - timeout: 3x\n")
	_, err := istio.ReadConfig("vs.yaml", data, nil, nil)
	var re *target.ReadError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, target.Pos{File: "vs.yaml", Line: 7}, re.Pos)
	assert.Equal(t, `vs.yaml:7: spec.http[0].timeout "3x": not a duration (want a number and a unit: 800ms, 1.5s, 1m30s)`, err.Error())
}

// FuzzReadKube feeds any bytes to the three Kubernetes readers: they
// never panic, and what they return stands on the input's lines.
func FuzzReadKube(f *testing.F) {
	f.Add([]byte(targettest.MixedStream))
	for _, dir := range []string{"istio", "gatewayapi", "linkerd"} {
		files, _ := filepath.Glob(filepath.Join(targettest.ConfigFixtureDir(dir), "*.yaml"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- &a {apiVersion: v1, kind: List, items: [*a]}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	// Issue 30: a List of Lists of aliases of a VirtualService.
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- &v0 {apiVersion: networking.istio.io/v1, kind: VirtualService, metadata: {name: r}, spec: {hosts: [r, r], http: [{timeout: 1s, route: [{destination: {host: r}}]}]}}\n" +
		"- &v1 {apiVersion: v1, kind: List, items: [*v0, *v0, *v0, *v0, *v0, *v0, *v0, *v0, *v0]}\n- &v2 {apiVersion: v1, kind: List, items: [*v1, *v1, *v1, *v1, *v1, *v1, *v1, *v1, *v1]}\n" +
		"- &v3 {apiVersion: v1, kind: List, items: [*v2, *v2, *v2, *v2, *v2, *v2, *v2, *v2, *v2]}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: \n  annotations: \n    retry.linkerd.io/: 0A")) // a Service without a name
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := kube.Objects(budget.New(), "f.yaml", data); err != nil {
			return
		}
		for _, read := range []func(string, []byte, target.Opener, *budget.Budget) ([]target.Object, error){istio.ReadConfig, gatewayapi.ReadConfig, linkerd.ReadConfig} {
			objs, err := read("f.yaml", data, nil, nil)
			if err != nil {
				continue
			}
			targettest.RequireInside(t, "f.yaml", data, objs)
		}
	})
}
