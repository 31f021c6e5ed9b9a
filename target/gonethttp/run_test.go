package gonethttp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gonethttp"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// goBudgetTest runs in the package of an emitted Go snippet: 100 calls of
// the first group through Do against a server that always answers 503.
// With the group's budget (Ratio 0.1, 3 attempts) the retries are the 10
// tokens the bucket starts with and the 0.1 each later call earns (the
// first call's is lost at the cap): 19, not the 200 of 3 attempts each;
// without it, all 200.
const goBudgetTest = `package PKG

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestBudget(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, budget := range []bool{true, false} {
		hits.Store(0)
		p := POLICY
		p.Base, p.Cap = 1, 1 // no waits: the test counts, it does not time
		if budget {
			p.Budget = &Budget{Ratio: p.Budget.Ratio}
		} else {
			p.Budget = nil
		}
		for range 100 {
			req, _ := http.NewRequest("GET", srv.URL, nil)
			resp, err := Do(context.Background(), srv.Client(), req, p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		t.Logf("budget %v: %d hits", budget, hits.Load())
		if budget && hits.Load() != 100+19 {
			t.Errorf("with the budget: %d hits, want 119 (100 calls, 10 tokens to start, 99 x 0.1 earned: the first call's is lost at the cap of 10)", hits.Load())
		}
		if !budget && hits.Load() != 300 {
			t.Errorf("without: %d hits, want 300", hits.Load())
		}
	}
}
`

// TestGoSnippetBudget runs the emitted Go snippet's Do with its retry
// budget against a server that only fails (go test in a module of its
// own, the standard library only).
func TestGoSnippetBudget(t *testing.T) {
	goTool := targettest.RequireTool(t, "go", "the Go toolchain")
	r := targettest.LoadReport(t, "policy.json")
	body, err := gonethttp.Target.Render(r, target.Options{Service: "shop-api", Namespace: "shop"})
	require.NoError(t, err)
	src := string(body)
	require.Contains(t, src, "Budget:      &Budget{Ratio: 0.1},")
	pkg := strings.TrimPrefix(strings.SplitN(src[strings.Index(src, "\npackage ")+1:], "\n", 2)[0], "package ")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module budgetcheck\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.go"), body, 0o644))
	test := strings.NewReplacer("PKG", pkg, "POLICY", "GETAPIUsersIDPolicy").Replace(goBudgetTest)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client_test.go"), []byte(test), 0o644))
	err = targettest.RunTool(dir, goTool, "test", "-count=1", "-v", ".")
	assert.NoError(t, err)
}

// goDeadlineTest runs in the package of an emitted Go snippet: how
// DeadlineFromRequest reads the header a caller set, and what Do sends.
const goDeadlineTest = `package PKG

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func TestDeadlineFromRequest(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration // 0: no deadline; -1: more than a century
	}{
		{"", 0},
		{"250", 250 * time.Millisecond},
		{" 250", 0},           // not a whole number
		{"0", 0},              // Envoy reads 0 as no timeout
		{"-5", 0},
		{"1.5", 0},
		{"9223372036854775807", -1}, // no overflow into the past
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set(DeadlineHeader, c.header)
		}
		ctx, cancel := DeadlineFromRequest(r)
		dl, ok := ctx.Deadline()
		cancel()
		if c.want == 0 {
			if ok {
				t.Errorf("header %q: a deadline in %v, want none", c.header, time.Until(dl))
			}
			continue
		}
		if !ok {
			t.Errorf("header %q: no deadline, want %v", c.header, c.want)
			continue
		}
		if left := time.Until(dl); c.want < 0 && left < 100*365*24*time.Hour || c.want > 0 && (left > c.want || left < c.want-50*time.Millisecond) {
			t.Errorf("header %q: %v left, want %v", c.header, left, c.want)
		}
	}
}

func TestDoSetsTimeLeft(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(DeadlineHeader))
	}))
	defer srv.Close()
	p := POLICY
	p.Attempts = 1
	// No deadline in ctx: the attempt's own bound, PerTry (or Timeout).
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := Do(context.Background(), srv.Client(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ms, err := strconv.ParseInt(got[0], 10, 64)
	if want := min(p.PerTry, p.Timeout).Milliseconds(); err != nil || ms > want || ms < want-50 {
		t.Errorf("header %q, want about %d (the attempt's bound)", got[0], want)
	}
	// Exactly MinUseful left would be sent; a little less is dropped.
	ctx, cancel := context.WithTimeout(context.Background(), p.MinUseful-time.Millisecond)
	defer cancel()
	req, _ = http.NewRequest("GET", srv.URL, nil)
	if _, err := Do(ctx, srv.Client(), req, p); !errors.Is(err, ErrNoUsefulTime) {
		t.Errorf("with less than MinUseful %v left: %v, want ErrNoUsefulTime", p.MinUseful, err)
	}
	if len(got) != 1 {
		t.Errorf("%d requests at the server, want 1: the dropped call was sent", len(got))
	}
}
`

// TestGoSnippetDeadline runs DeadlineFromRequest and Do of the emitted Go
// snippet in a module of its own: the header a caller sets is read as
// whole milliseconds, 0 and anything else as no deadline (as Envoy reads
// them); Do sends the attempt's time left and drops a call with less than
// MinUseful left.
func TestGoSnippetDeadline(t *testing.T) {
	goTool := targettest.RequireTool(t, "go", "the Go toolchain")
	r := targettest.LoadReport(t, "policy.json")
	body, err := gonethttp.Target.Render(r, target.Options{Service: "shop-api", Namespace: "shop"})
	require.NoError(t, err)
	src := string(body)
	require.Contains(t, src, `const DeadlineHeader = "x-envoy-expected-rq-timeout-ms"`)
	pkg := strings.TrimPrefix(strings.SplitN(src[strings.Index(src, "\npackage ")+1:], "\n", 2)[0], "package ")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module deadlinecheck\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.go"), body, 0o644))
	test := strings.NewReplacer("PKG", pkg, "POLICY", "GETAPIUsersIDPolicy").Replace(goDeadlineTest)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client_test.go"), []byte(test), 0o644))
	assert.NoError(t, targettest.RunTool(dir, goTool, "test", "-count=1", "-v", "."))
}
