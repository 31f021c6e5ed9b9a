package targettest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
)

// LBMountOpener is the Opener of the reader tests: paths under a mount point
// ("/etc/nginx") are read from a folder of testdata, and a folder is
// answered with the names in it, one a line, as the readers expect of an
// Opener. Other paths do not exist.
func LBMountOpener(mounts map[string]string) target.Opener {
	points := make([]string, 0, len(mounts))
	for p := range mounts {
		points = append(points, p)
	}
	// The longest mount point first.
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return func(path string) ([]byte, error) {
		path = filepath.ToSlash(filepath.Clean(path))
		for _, p := range points {
			rel, ok := strings.CutPrefix(path, p)
			if !ok || rel != "" && !strings.HasPrefix(rel, "/") {
				continue
			}
			real := filepath.Join(mounts[p], filepath.FromSlash(rel))
			st, err := os.Stat(real)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				return os.ReadFile(real)
			}
			entries, err := os.ReadDir(real)
			if err != nil {
				return nil, err
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return []byte(strings.Join(names, "\n")), nil
		}
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}
}

// LBSummary is an object in one line: what the reader tests assert, every
// value with where it comes from ("30@nginx.conf:56", "60=default").
func LBSummary(o target.Object) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q @%d", o.Kind, o.Name, o.Pos.Line)
	if o.Upstream != "" {
		fmt.Fprintf(&b, " up=%s", o.Upstream)
	}
	for _, m := range o.Matches {
		ci := ""
		if m.CaseInsensitive {
			ci = "(i)"
		}
		rule := ""
		if m.Rule > 0 {
			rule = fmt.Sprintf("#%d", m.Rule)
		}
		fmt.Fprintf(&b, " %s%s=%s%s", m.Kind, ci, m.Value, rule)
	}
	if o.Router != "" && o.Target == "haproxy" {
		fmt.Fprintf(&b, " router=%q", o.Router)
	}
	where := func(p target.Pos, def bool) string {
		if def {
			return "=default"
		}
		return "@" + filepath.Base(p.File) + ":" + fmt.Sprint(p.Line)
	}
	f := func(name string, s *target.Setting[float64]) {
		if s != nil {
			fmt.Fprintf(&b, " %s=%g%s", name, s.Value, where(s.Pos, s.Default))
		}
	}
	i := func(name string, s *target.Setting[int]) {
		if s != nil {
			fmt.Fprintf(&b, " %s=%d%s", name, s.Value, where(s.Pos, s.Default))
		}
	}
	f("timeout", o.Timeout)
	if o.TimeoutIdle && o.Timeout != nil {
		b.WriteString("(idle)")
	}
	f("perTry", o.PerTryTimeout)
	f("connect", o.ConnectTimeout)
	f("queue", o.QueueTimeout)
	i("attempts", o.Attempts)
	if s := o.RetryOn; s != nil {
		fmt.Fprintf(&b, " retryOn=%s%s", strings.Join(s.Value, ","), where(s.Pos, s.Default))
	}
	if s := o.RetryNonIdempotent; s != nil {
		fmt.Fprintf(&b, " nonIdempotent=%t%s", s.Value, where(s.Pos, s.Default))
	}
	i("maxInFlight", o.MaxInFlight)
	if o.Jitter != "" {
		fmt.Fprintf(&b, " jitter=%s", o.Jitter)
	}
	return b.String()
}

// LBSummaries is LBSummary of each object.
func LBSummaries(objs []target.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = LBSummary(o)
	}
	return out
}

// LBNoteWith returns the first note of o that holds every part.
func LBNoteWith(o target.Object, parts ...string) string {
	for _, n := range o.Notes {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(n, p)
		}
		if ok {
			return n
		}
	}
	return ""
}

// LBObjectNamed returns the object of a name, failing the test without one.
func LBObjectNamed(t *testing.T, objs []target.Object, name string) target.Object {
	t.Helper()
	for _, o := range objs {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no object %q in %q", name, LBSummaries(objs))
	return target.Object{}
}

// LBCheckLines fails when an object or one of its settings stands outside
// the lines of data, or in another file than file ("": any file).
func LBCheckLines(t *testing.T, file string, data []byte, objs []target.Object) {
	t.Helper()
	lines := bytes.Count(data, []byte("\n")) + 1
	in := func(what string, p target.Pos) {
		if file != "" && p.File != file || p.Line < 1 || p.Line > lines {
			t.Fatalf("%s at %s, outside the %d lines of %s", what, p, lines, file)
		}
	}
	for _, o := range objs {
		in(o.Name, o.Pos)
		for _, s := range []*target.Setting[float64]{o.Timeout, o.PerTryTimeout, o.ConnectTimeout, o.QueueTimeout, o.BackoffBase, o.BackoffMax, o.RetryBudget, o.HedgeDelay} {
			if s != nil {
				in(o.Name+" setting", s.Pos)
			}
		}
		for _, s := range []*target.Setting[int]{o.Attempts, o.MaxInFlight, o.HedgeAttempts} {
			if s != nil {
				in(o.Name+" setting", s.Pos)
			}
		}
		if o.RetryOn != nil {
			in(o.Name+" retry_on", o.RetryOn.Pos)
		}
		if o.RetryNonIdempotent != nil {
			in(o.Name+" non-idempotent", o.RetryNonIdempotent.Pos)
		}
	}
}

// LBDuration reads a duration of the nginx and HAProxy snippets ("250ms",
// "1s"), -1 when it is none.
func LBDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return d
}
