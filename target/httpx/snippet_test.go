package httpx_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/httpx"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestSnippets: httpx's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, httpx.Target, targettest.Checks{
		Validate:   validatePython,
		Tool:       true,
		Behaviours: readHTTPX,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 1, HangWait: time.Second, FailSuccess: 0.99,
			Why: "send() starts an attempt only while a whole one fits: after a timeout none does"},
	})
}

// validatePython compiles Python snippets with py_compile, all at once.
func validatePython(t *testing.T, bodies ...[]byte) error {
	// Not an end-to-end binary: missing, the check skips even under
	// TUNETIMEOUT_E2E=1. The system python3 starts faster than a pyenv shim.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed: the httpx snippet is not compiled (apt-get install -y python3)")
		}
	}
	dir := t.TempDir()
	args := []string{"-m", "py_compile"}
	for i, body := range bodies {
		f := filepath.Join(dir, fmt.Sprintf("httpx_snippet_%d.py", i))
		if err := os.WriteFile(f, body, 0o644); err != nil {
			return err
		}
		args = append(args, f)
	}
	return targettest.RunTool(dir, py, args...)
}

var (
	pyGroup   = regexp.MustCompile(`(?s)\n    ("(?:\\.|[^"\\])*"): \{\n(.*?)\n    \},`)
	pyTimeout = regexp.MustCompile(`httpx\.Timeout\(connect=([0-9.]+), read=([0-9.]+), write=([0-9.]+), pool=([0-9.]+)\)`)
	pyField   = regexp.MustCompile(`"(\w+)": ([^,\n]+),`)
)

func pyDuration(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return time.Duration(f*1000+0.5) * time.Millisecond
}

func readHTTPX(body []byte) ([]targettest.Behaviour, error) {
	var out []targettest.Behaviour
	for _, m := range pyGroup.FindAllSubmatch(body, -1) {
		t := pyTimeout.FindSubmatch(m[2])
		if t == nil {
			return nil, fmt.Errorf("group %s: no httpx.Timeout", m[1])
		}
		f := map[string]string{}
		for _, kv := range pyField.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = string(kv[2])
		}
		connect, read, write, pool := pyDuration(string(t[1])), pyDuration(string(t[2])), pyDuration(string(t[3])), pyDuration(string(t[4]))
		one := pool + connect + write + read
		b := targettest.Behaviour{Name: string(m[1]), PerTry: read, Connect: connect, Setup: pool + connect + write}
		b.Attempts, _ = strconv.Atoi(f["attempts"])
		b.RetryNeverSent = b.Attempts > 1
		b.RetrySent = f["retry_sent"] == "True"
		b.Timeouts = b.RetrySent
		b.Base, b.Cap = pyDuration(f["backoff_base"]), pyDuration(f["backoff_cap"])
		// send(): the first attempt always goes; another only while a whole
		// attempt fits in what is left of the deadline.
		if dl := f["deadline"]; dl != "None" {
			b.Bound = pyDuration(dl)
			b.Worst = max(b.Bound, one)
			b.MinUseful = one
		} else {
			b.Worst = time.Duration(b.Attempts)*one + time.Duration(b.Attempts-1)*b.Cap
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no group in the httpx snippet")
	}
	return out, nil
}
