package nginx_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/nginx"
)

// TestSnippets: nginx's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, nginx.Target, targettest.Checks{
		Validate:     targettest.EachRun(validateNginx),
		Tool:         true,
		Behaviours:   readNginx,
		NoRetryAfter: true,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 1, HangWait: time.Second, FailSuccess: 0.99,
			Why: "no try begins after proxy_next_upstream_timeout, the deadline less one try"},
	})
}

func validateNginx(t *testing.T, body []byte) error {
	nginx := targettest.RequireTool(t, "nginx", "apt-get install -y nginx haproxy")
	dir := t.TempDir()
	snippet := targettest.UpstreamServer.ReplaceAll(body, []byte("${1}127.0.0.1:80"))
	if err := os.WriteFile(filepath.Join(dir, "snippet.conf"), snippet, 0o644); err != nil {
		return err
	}
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/snippet.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	return targettest.RunTool(dir, nginx, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf"))
}

var (
	ngxLocation  = regexp.MustCompile(`(?s)\n    location ([^{]+?) \{\n(.*?)\n    \}`)
	ngxDirective = regexp.MustCompile(`(?m)^\s+(\w+) ([^;]+);`)
	ngxServer    = regexp.MustCompile(`(?m)^    server \S+`)
)

func readNginx(body []byte) ([]targettest.Behaviour, error) {
	entries := len(ngxServer.FindAll(body, -1))
	var out []targettest.Behaviour
	for _, m := range ngxLocation.FindAllSubmatch(body, -1) {
		f := map[string]string{}
		for _, kv := range ngxDirective.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = string(kv[2])
		}
		c, r := targettest.LBDuration(f["proxy_connect_timeout"]), targettest.LBDuration(f["proxy_read_timeout"])
		one := c + r
		b := targettest.Behaviour{Name: string(m[1]), PerTry: r, Connect: c, Setup: c, Attempts: 1, CatchAll: string(m[1]) == "/"}
		if next := f["proxy_next_upstream"]; next != "" && next != "off" {
			tries, _ := strconv.Atoi(f["proxy_next_upstream_tries"])
			// A request tries each server entry at most once.
			b.Attempts = min(tries, entries)
			b.RetryNeverSent = true
			for _, c := range strings.Fields(next) {
				switch {
				case c == "non_idempotent":
					b.RetrySent = true
				case c == "timeout":
					b.Timeouts = true
				case strings.HasPrefix(c, "http_"):
					b.Statuses = append(b.Statuses, strings.TrimPrefix(c, "http_"))
				}
			}
		}
		// No try begins after proxy_next_upstream_timeout (0: none), and a
		// try takes at most a connect and a read.
		b.Worst = time.Duration(b.Attempts) * one
		if u := targettest.LBDuration(f["proxy_next_upstream_timeout"]); u > 0 && b.Attempts > 1 {
			b.Worst = min(b.Worst, u+one)
			b.Bound, b.MinUseful = u+one, one
		}
		out = append(out, b)
	}
	return out, nil
}
