package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		in   State
		want string
	}{
		{"start: no rate yet", State{Read: 0, Total: 45_600_000, Records: 0, Elapsed: 100 * time.Millisecond},
			"Reading 0 B of 45.6 MB (0 %), 0 lines"},
		{"a quarter in 10s: 30s left", State{Read: 11_400_000, Total: 45_600_000, Records: 1_200_000, Elapsed: 10 * time.Second},
			"Reading 11.4 MB of 45.6 MB (25 %), 1,200,000 lines, 120,000 lines/s, about 30s left"},
		{"unknown total: no share, no time left", State{Read: 2_500, Total: -1, Records: 40, Elapsed: 2 * time.Second},
			"Reading 2.5 kB, 40 lines, 20 lines/s"},
		{"nearly done", State{Read: 999, Total: 1000, Records: 10, Elapsed: time.Second},
			"Reading 999 B of 1 kB (99 %), 10 lines, 10 lines/s, under 1s left"},
		{"done", State{Read: 1000, Total: 1000, Records: 10, Elapsed: time.Second},
			"Reading 1 kB of 1 kB (100 %), 10 lines, 10 lines/s"},
		{"an hour left", State{Read: 1e9, Total: 2e9, Records: 5e6, Elapsed: time.Hour},
			"Reading 1 GB of 2 GB (50 %), 5,000,000 lines, 1,389 lines/s, about 1h left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render(tt.in)
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, got, "\n")
		})
	}
}

func TestBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1 kB", 12_345: "12.3 kB",
		999_499: "999 kB", 999_500: "1 MB", 45_600_000: "45.6 MB", 3_000_000_000_000: "3 TB"} {
		assert.Equal(t, want, Bytes(in), "%d", in)
	}
}

// TestIsTerminalNot: pipes, files and buffers are not terminals, so the
// tests (and a redirected stderr) never see a progress line.
func TestIsTerminalNot(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, IsTerminal(w), "pipe")
	f, err := os.Create(filepath.Join(t.TempDir(), "err.log"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f), "regular file")
	assert.False(t, IsTerminal(&bytes.Buffer{}), "buffer")
	assert.False(t, IsTerminal((*os.File)(nil)), "nil file")
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		assert.True(t, IsTerminal(tty), "/dev/tty")
	}
}

// syncBuffer is a bytes.Buffer safe for the meter's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMeterDrawsAndErases(t *testing.T) {
	var out syncBuffer
	m := New(&out)
	m.interval = 5 * time.Millisecond
	m.Begin(1000)
	m.Read(400)
	m.Records(7)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Reading 400 B of 1 kB (40 %), 7 lines") },
		2*time.Second, 5*time.Millisecond)
	m.End()
	m.End() // twice is fine
	got := out.String()
	assert.True(t, strings.HasPrefix(got, "\r"), "each draw starts at the line's start: %q", got)
	assert.True(t, strings.HasSuffix(got, "\r\x1b[K"), "End erases the line: %q", got)
	assert.NotContains(t, got, "\n", "one line, redrawn")
}

func TestMeterQuickReadDrawsNothing(t *testing.T) {
	var out syncBuffer
	m := New(&out)
	m.Begin(-1)
	m.Read(10)
	m.End()
	assert.Empty(t, out.String(), "a read shorter than one interval leaves no trace")
	New(&out).End() // End without Begin
}
