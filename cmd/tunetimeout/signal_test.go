package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain runs the tests and removes the binary they built, once they
// ran. Started by a golden script as "tunetimeout" (script_test.go), the
// test binary is the command itself.
func TestMain(m *testing.M) {
	testscript.Main(removeBinary{m}, map[string]func(){"tunetimeout": main})
}

// removeBinary removes the binary the tests built after they ran.
type removeBinary struct{ m *testing.M }

func (r removeBinary) Run() int {
	code := r.m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	return code
}

// binary builds the command once for the tests that run it as a process.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tunetimeout-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "tunetimeout")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// groupsCSV writes routes x rows calls of CSV: many groups make the
// simulation long (each group replays 600,000 requests).
func groupsCSV(t *testing.T, dir string, routes, rows int) string {
	var b strings.Builder
	b.WriteString("route,latency_ms\n")
	for i := range routes * rows {
		fmt.Fprintf(&b, "/r%d,%d\n", i%routes, 5+i*7919%900)
	}
	path := filepath.Join(dir, "groups.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestSignalStopsTheRun sends SIGINT or SIGTERM to the running command at
// each stage: it stops well within the grace period (so by itself, not by
// the watchdog), exits 130, and leaves no --output nor temporary file.
func TestSignalStopsTheRun(t *testing.T) {
	bin := binary(t)
	tests := []struct {
		name  string
		sig   syscall.Signal
		args  func(dir string) []string
		stdin bool          // an endless CSV on standard input
		after time.Duration // when to send the signal
	}{
		{"reading standard input", syscall.SIGINT, func(dir string) []string {
			return []string{"analyze", "--output", filepath.Join(dir, "report.txt"), "-"}
		}, true, 500 * time.Millisecond},
		{"summarizing standard input", syscall.SIGTERM, func(dir string) []string {
			return []string{"summarize", "--output", filepath.Join(dir, "summary.hlog"), "-"}
		}, true, 500 * time.Millisecond},
		{"simulating", syscall.SIGTERM, func(dir string) []string {
			return []string{"simulate", "--by", "route", "--deadline", "2s", "--attempts", "3", "-o", "json",
				"--output", filepath.Join(dir, "report.json"), groupsCSV(t, dir, 2000, 20)}
		}, false, 1500 * time.Millisecond},
		{"analysing with snippets", syscall.SIGINT, func(dir string) []string {
			return []string{"analyze", "--by", "route", "--max-groups", "5000", "--deadline", "2s", "--attempts", "2",
				"--emit", "envoy", "--emit-dir", filepath.Join(dir, "out"), "--output", filepath.Join(dir, "report.txt"), groupsCSV(t, dir, 3000, 10)}
		}, false, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, tt.args(dir)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			var stop chan struct{}
			if tt.stdin {
				w, err := cmd.StdinPipe()
				require.NoError(t, err)
				stop = make(chan struct{})
				go func() {
					defer w.Close()
					_, _ = io.WriteString(w, "latency_ms\n")
					row := []byte(strings.Repeat("12\n", 4096))
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := w.Write(row); err != nil {
							return
						}
					}
				}()
			}
			before := entries(t, dir)
			require.NoError(t, cmd.Start())
			time.Sleep(tt.after)
			require.NoError(t, cmd.Process.Signal(tt.sig))
			sent := time.Now()
			err := cmd.Wait()
			took := time.Since(sent)
			if stop != nil {
				close(stop)
			}
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the run ended before the signal: %s", stderr.String())
			assert.Equal(t, 130, ee.ExitCode(), stderr.String())
			assert.Less(t, took, stopGrace/2, "stopped by itself, not by the watchdog")
			name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tt.sig]
			assert.Equal(t, "tunetimeout: interrupted ("+name+")\n", lastLine(stderr.String()))
			assert.Equal(t, before, entries(t, dir), "no output, no temporary file")
		})
	}
}

// TestSecondSignal: a run blocked on a pipe that sends nothing stops at
// the second signal at once.
func TestSecondSignal(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "summarize", "--output", filepath.Join(dir, "s.hlog"), "-")
	w, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer w.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	_, _ = io.WriteString(w, "latency_ms\n1\n2\n")
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	sent := time.Now()
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	assert.Less(t, time.Since(sent), stopGrace/2)
	assert.Equal(t, "tunetimeout: interrupted (SIGINT)\n", lastLine(stderr.String()))
	assert.Empty(t, entries(t, dir), "the temporary file is removed")
}

// TestInterruptedInProcess: a run whose context a signal cancelled exits
// 130 and writes no --output, even when its work was done.
func TestInterruptedInProcess(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(interrupted{syscall.SIGTERM})
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"analyze", mixture, "-o", "json", "--output", out}, nil, &stdout, &stderr)
	assert.Equal(t, 130, code)
	assert.Equal(t, "tunetimeout: interrupted (SIGTERM)\n", stderr.String())
	assert.Empty(t, entries(t, dir))
}

func TestOutputIsAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "data.csv")
	data, err := os.ReadFile(mixture)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	for _, args := range [][]string{
		{"analyze", in, "--output", in},
		{"analyze", filepath.Join(dir, "*.csv"), "--output", filepath.Join(dir, ".", "data.csv")},
		{"simulate", in, "--output", in},
		{"summarize", in, "--output", in},
	} {
		_, errOut, code := execute(t, "", args...)
		assert.Equal(t, 2, code, args)
		assert.Contains(t, errOut, "is also an input: writing it would destroy what is read", args)
		got, err := os.ReadFile(in)
		require.NoError(t, err)
		assert.Equal(t, data, got, "the input is intact")
	}
	// A new file, or another one, is written, keeping the mode of the file
	// it replaces.
	other := filepath.Join(dir, "report.txt")
	require.NoError(t, os.WriteFile(other, []byte("old"), 0o600))
	_, errOut, code := execute(t, "", "analyze", in, "--output", other)
	require.Equal(t, 0, code, errOut)
	st, err := os.Stat(other)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.Greater(t, st.Size(), int64(100))
}

// entries lists a directory's names, recursively.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			names = append(names, strings.TrimPrefix(path, dir))
		}
		return nil
	}))
	return names
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:] + "\n"
}

// TestOutputThatIsNotAFile: --output through a symbolic link replaces the
// file it names and keeps the link; a named pipe is written to, not
// replaced.
func TestOutputThatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "report.txt")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
	link := filepath.Join(dir, "latest.txt")
	require.NoError(t, os.Symlink("report.txt", link))
	_, errOut, code := execute(t, "", "analyze", mixture, "--output", link)
	require.Equal(t, 0, code, errOut)
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link is kept")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Contains(t, string(got), "Recommended timeout", "the file it names is written")
	st, err = os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	read := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			read <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		read <- b
	}()
	_, errOut, code = execute(t, "", "analyze", mixture, "--output", fifo)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, string(<-read), "Recommended timeout", "written into the pipe")
	st, err = os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeNamedPipe, "still a pipe")
}
