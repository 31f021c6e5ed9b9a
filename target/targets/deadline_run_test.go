package targets

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gonethttp"
	"github.com/tunetimeout/tunetimeout/target/httpx"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

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

// httpxTimeLeftRun prints what the emitted httpx snippet's time_left
// reads from header mappings.
const httpxTimeLeftRun = `import email.message
import json

import snippet

cases = [{}, {"X-Envoy-Expected-Rq-Timeout-Ms": "250"}, {"x-envoy-expected-rq-timeout-ms": "0"},
         {"x-envoy-expected-rq-timeout-ms": "1.5"}, {"x-envoy-expected-rq-timeout-ms": "-5"}]
m = email.message.Message()  # http.server's headers
m["X-Envoy-Expected-Rq-Timeout-Ms"] = "40"
print(json.dumps([snippet.time_left(c) for c in cases] + [snippet.time_left(m)]))
`

// TestHTTPXSnippetTimeLeft runs the emitted httpx snippet's time_left
// (Debian's python3 and httpx) on header mappings: names in any case,
// whole milliseconds, 0 and anything else as None.
func TestHTTPXSnippetTimeLeft(t *testing.T) {
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-E", "-s", "-c", "import httpx").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import httpx (%v: %s): apt-get install -y python3-httpx", py, err, out)
	}
	body, err := httpx.Target.Render(targettest.LoadReport(t, "policy.json"), target.Options{Service: "shop-api", Namespace: "shop"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.py"), body, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte(httpxTimeLeftRun), 0o644))
	cmd := exec.Command(py, "-E", "-s", "-B", "run.py")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []*float64
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	want := []*float64{nil, floatPtr(0.25), nil, nil, nil, floatPtr(0.04)}
	assert.Equal(t, want, got)
}

func floatPtr(f float64) *float64 { return &f }
