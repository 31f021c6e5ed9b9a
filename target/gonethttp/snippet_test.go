package gonethttp_test

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gonethttp"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestSnippets: go's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, gonethttp.Target, targettest.Checks{
		Validate:   validateGo,
		Tool:       true,
		Behaviours: readGo,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 2, HangWait: time.Second, FailSuccess: 0.99,
			Why: "Do gives each attempt the smaller of PerTry and the time left"},
	})
}

// validateGo checks that Go snippets are gofmt-clean and pass go vet (which
// type-checks them), each as a package of one module: one go vet for all.
func validateGo(t *testing.T, bodies ...[]byte) error {
	goTool := targettest.RequireTool(t, "go", "the Go toolchain")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module snippetcheck\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	for i, body := range bodies {
		if formatted, err := format.Source(body); err != nil || !bytes.Equal(formatted, body) {
			return fmt.Errorf("gofmt would change Go snippet %d (%v)", i, err)
		}
		pkg := filepath.Join(dir, fmt.Sprintf("p%d", i))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pkg, "client.go"), body, 0o644); err != nil {
			return err
		}
	}
	return targettest.RunTool(dir, goTool, "vet", "./...")
}

var (
	goPolicy  = regexp.MustCompile(`(?s)var (\w+) = Policy\{(.*?)\n\}`)
	goField   = regexp.MustCompile(`(\w+):\s+([^,\n]+),`)
	goDurExpr = regexp.MustCompile(`^(\d+) \* time\.(Millisecond|Second)$`)
	goConnect = regexp.MustCompile(`var dialer = &net.Dialer\{Timeout: ([^,]+),`)
)

func goDuration(expr string) time.Duration {
	if expr == "time.Second" {
		return time.Second
	}
	m := goDurExpr.FindStringSubmatch(expr)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	if m[2] == "Second" {
		return time.Duration(n) * time.Second
	}
	return time.Duration(n) * time.Millisecond
}

func readGo(body []byte) ([]targettest.Behaviour, error) {
	var out []targettest.Behaviour
	connect := time.Duration(-1)
	if m := goConnect.FindSubmatch(body); m != nil {
		connect = goDuration(string(m[1]))
	}
	for _, m := range goPolicy.FindAllSubmatch(body, -1) {
		f := map[string]string{}
		for _, kv := range goField.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = strings.TrimSpace(string(kv[2]))
		}
		// Do: a context of Timeout over the call, of PerTry per attempt;
		// never-sent requests are retried, sent ones only with RetrySent.
		b := targettest.Behaviour{Name: string(m[1]), Bound: goDuration(f["Timeout"]), PerTry: goDuration(f["PerTry"]), Connect: connect}
		b.Worst = b.Bound
		b.Attempts, _ = strconv.Atoi(f["Attempts"])
		b.RetryNeverSent = b.Attempts > 1
		b.RetrySent = f["RetrySent"] == "true"
		b.Timeouts = b.RetrySent
		if f["Base"] != "" {
			b.Base, b.Cap, b.MinUseful = goDuration(f["Base"]), goDuration(f["Cap"]), goDuration(f["MinUseful"])
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Policy in the Go snippet")
	}
	return out, nil
}
