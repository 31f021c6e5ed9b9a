package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// policiesOf runs analyze with -o json and returns each group's policy by name.
func policiesOf(t *testing.T, args ...string) map[string]policyJSON {
	t.Helper()
	out, stderr, code := execute(t, "", append([]string{"analyze", "-o", "json"}, args...)...)
	require.Equal(t, 0, code, stderr)
	var r struct {
		Groups []struct {
			Name     string     `json:"name"`
			Policy   policyJSON `json:"policy"`
			Findings []struct {
				Code string `json:"code"`
			} `json:"findings"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	got := map[string]policyJSON{}
	for _, g := range r.Groups {
		p := g.Policy
		for _, f := range g.Findings {
			p.Codes = append(p.Codes, f.Code)
		}
		got[g.Name] = p
	}
	return got
}

type policyJSON struct {
	Idempotent       bool     `json:"idempotent"`
	IdempotentSource string   `json:"idempotent_source"`
	Methods          []string `json:"methods"`
	Method           *string  `json:"method"`
	RetryOn          []string `json:"retry_on"`
	Codes            []string `json:"-"`
}

// TestIdempotentFromTheData pins issue 29's item 18: the README's nginx
// quick start (--by route) treated its GET-only routes as not idempotent,
// so nothing was retried. The methods of the calls now decide, without
// --by method; a route that mixes GET and POST is not retried, and the
// report says so.
func TestIdempotentFromTheData(t *testing.T) {
	got := policiesOf(t, "--nginx-conf", filepath.Join("..", "..", "testdata", "nginx", "nginx.conf"), "--log-format-name", "timing",
		"--by", "route", "--pool", "64", "--deadline", "3s", "--attempts", "3",
		filepath.Join("..", "..", "testdata", "nginx", "access.log"))
	require.Len(t, got, 2)
	for name, p := range got {
		assert.True(t, p.Idempotent, "%s: every call is a GET", name)
		assert.Equal(t, "methods", p.IdempotentSource, name)
		assert.Equal(t, []string{"GET"}, p.Methods, name)
		assert.Contains(t, p.RetryOn, "timeout", name)
		assert.NotContains(t, p.Codes, "TT-RETRY-NEVER-SENT-ONLY", name)
	}

	csv := filepath.Join(t.TempDir(), "methods.csv")
	var b strings.Builder
	b.WriteString("route,method,status,latency_ms\n")
	for i := range 2000 {
		ms := 10 + i%50
		b.WriteString("/api/items,GET,200," + strconv.Itoa(ms) + "\n")
		if i%4 == 0 {
			b.WriteString("/api/orders,GET,200," + strconv.Itoa(ms) + "\n")
		} else {
			b.WriteString("/api/orders,POST,201," + strconv.Itoa(ms+5) + "\n")
		}
	}
	require.NoError(t, os.WriteFile(csv, []byte(b.String()), 0o600))

	got = policiesOf(t, "--by", "route", "--deadline", "3s", "--attempts", "3", csv)
	items, orders := got["/api/items"], got["/api/orders"]
	assert.True(t, items.Idempotent)
	assert.Equal(t, "methods", items.IdempotentSource)
	assert.False(t, orders.Idempotent, "GET and POST mixed")
	assert.Equal(t, []string{"GET", "POST"}, orders.Methods)
	assert.Equal(t, []string{"connect-failure", "refused-stream"}, orders.RetryOn)
	assert.Contains(t, orders.Codes, "TT-METHODS-MIXED")

	// --idempotent does not override the POSTs; --by route,method splits
	// them, each group from its own method.
	got = policiesOf(t, "--by", "route", "--deadline", "3s", "--attempts", "3", "--idempotent", csv)
	assert.False(t, got["/api/orders"].Idempotent)
	assert.Contains(t, got["/api/orders"].Codes, "TT-METHOD-NOT-IDEMPOTENT")
	got = policiesOf(t, "--by", "route,method", "--deadline", "3s", "--attempts", "3", csv)
	assert.True(t, got["/api/orders GET"].Idempotent)
	assert.Equal(t, "method", got["/api/orders GET"].IdempotentSource)
	assert.False(t, got["/api/orders POST"].Idempotent)
}
