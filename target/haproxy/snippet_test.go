package haproxy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/haproxy"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestSnippets: haproxy's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, haproxy.Target, targettest.Checks{
		Validate:     targettest.EachRun(validateHAProxy),
		Tool:         true,
		Behaviours:   readHAProxy,
		NoRetryAfter: true,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 1, HangWait: time.Second, FailSuccess: 0.99,
			Why: "only connection failures fit as retries: timed-out attempts are not retried"},
	})
}

func validateHAProxy(t *testing.T, body []byte) error {
	haproxy := targettest.RequireTool(t, "haproxy", "apt-get install -y nginx haproxy")
	dir := t.TempDir()
	// A frontend so that the configuration would start: the snippet's
	// commented use_backend lines, and its first backend as the default.
	fe := "frontend check\n    mode http\n    bind 127.0.0.1:18080\n    timeout client 10s\n"
	hasDefault := false
	for _, m := range regexp.MustCompile(`(?m)^#   ((?:use|default)_backend .*)$`).FindAllSubmatch(body, -1) {
		fe += "    " + string(m[1]) + "\n"
		hasDefault = hasDefault || bytes.HasPrefix(m[1], []byte("default_backend"))
	}
	if first := regexp.MustCompile(`(?m)^backend (\S+)`).FindSubmatch(body); first != nil && !hasDefault {
		fe += "    default_backend " + string(first[1]) + "\n"
	}
	cfg := "global\n    log stderr format raw local0\n\n" + fe + "\n" + string(targettest.UpstreamServer.ReplaceAll(body, []byte("${1}127.0.0.1:80")))
	f := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(f, []byte(cfg), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(haproxy, "-c", "-f", f).CombinedOutput()
	if err != nil {
		return fmt.Errorf("haproxy -c: %w\n%s\n%s", err, out, cfg)
	}
	if bytes.Contains(out, []byte("[WARNING]")) || bytes.Contains(out, []byte("[ALERT]")) {
		return fmt.Errorf("haproxy -c warns:\n%s\n%s", out, cfg)
	}
	return nil
}

var (
	hapBackend   = regexp.MustCompile(`(?s)(?:^|\n)backend (\S+)\n(.*?)(?:\n\n|\n#|$)`)
	hapDirective = regexp.MustCompile(`(?m)^    (timeout queue|timeout connect|timeout server|retries|retry-on|option redispatch) ?(.*)$`)
)

func readHAProxy(body []byte) ([]targettest.Behaviour, error) {
	var out []targettest.Behaviour
	for _, m := range hapBackend.FindAllSubmatch(body, -1) {
		f := map[string]string{}
		for _, kv := range hapDirective.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = strings.TrimSpace(string(kv[2]))
		}
		q, c, s := targettest.LBDuration(f["timeout queue"]), targettest.LBDuration(f["timeout connect"]), targettest.LBDuration(f["timeout server"])
		retries := 3 // HAProxy's default
		if r, ok := f["retries"]; ok {
			retries, _ = strconv.Atoi(r)
		}
		conds := []string{"conn-failure"} // the default of retry-on
		if on, ok := f["retry-on"]; ok {
			conds = strings.Fields(on)
		}
		b := targettest.Behaviour{Name: string(m[1]), PerTry: s, Connect: c, Setup: q + c, Attempts: retries + 1, StaticAttempts: true, CatchAll: strings.HasSuffix(string(m[1]), "_catch_all")}
		l7 := false
		for _, cond := range conds {
			switch {
			case cond == "conn-failure":
				b.RetryNeverSent = retries > 0
			case cond == "response-timeout":
				l7, b.Timeouts = true, true
			case target.IsStatus(cond):
				l7 = true
				b.Statuses = append(b.Statuses, cond)
			default:
				l7 = true
			}
		}
		b.RetrySent = l7 && retries > 0
		// The worst case with a silent server (configuration.txt 2.6 and
		// back_handle_st_cer): the queue once, and once more on a
		// redispatch; a connection failure costs at most timeout connect
		// (a refused one waits min(connect, 1s) before the next try); a
		// layer-7 retry costs a whole connect and server timeout.
		switch {
		case retries == 0:
			b.Worst = q + c + s
		case l7:
			b.Worst = 2*q + time.Duration(retries+1)*(c+s)
		default:
			b.Worst = 2*q + time.Duration(retries)*c + c + s
		}
		out = append(out, b)
	}
	return out, nil
}
