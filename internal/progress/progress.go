// Package progress draws one line on a terminal while large inputs are
// read: the bytes read of the total (when it is known), the records per
// second and an estimate of the time left. It draws only on a terminal
// (IsTerminal), and only on the writer it is given: the command gives it
// standard error, never standard output, where the report goes.
package progress

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// IsTerminal reports whether w is a character device, such as a terminal.
// It is the check of golang.org/x/term without the dependency: a pipe, a
// file or a buffer is not one. /dev/null is a character device too, so
// progress drawn there is lost, which is harmless.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// State is how far the reading has come.
type State struct {
	Read    int64         // bytes read
	Total   int64         // bytes in all, < 0 when unknown (standard input)
	Records int64         // records (lines, rows) read
	Elapsed time.Duration // since the reading began
}

// Render writes a state as one line without a line break, for example
//
//	Reading 12.3 MB of 45.6 MB (27 %), 1,200,000 lines, 120,000 lines/s, about 30s left
//
// The rate and the time left need half a second of reading; the time left
// needs the total.
func Render(s State) string {
	out := "Reading " + Bytes(s.Read)
	if s.Total >= 0 {
		out += " of " + Bytes(s.Total)
		if s.Total > 0 {
			out += fmt.Sprintf(" (%d %%)", min(100, s.Read*100/s.Total))
		}
	}
	out += ", " + human.Count(s.Records) + " lines"
	if s.Elapsed < 500*time.Millisecond {
		return out
	}
	secs := s.Elapsed.Seconds()
	out += ", " + human.Count(int64(math.Round(float64(s.Records)/secs))) + " lines/s"
	if s.Total > 0 && s.Read > 0 && s.Read < s.Total {
		left := time.Duration(float64(s.Total-s.Read) / (float64(s.Read) / secs) * float64(time.Second))
		if left < time.Second {
			out += ", under 1s left"
		} else {
			out += ", about " + human.Duration(left.Round(time.Second)) + " left"
		}
	}
	return out
}

// Bytes writes a size in decimal units to three significant digits:
// 950 B, 12.3 kB, 45.6 MB, 1.2 GB.
func Bytes(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB"} {
		v /= 1000
		if v < 999.5 || unit == "TB" {
			return strconv.FormatFloat(v, 'g', 3, 64) + " " + unit
		}
	}
	panic("unreachable")
}

// Meter follows the reading and redraws its line every Interval. Begin
// starts it, End stops it and erases the line; Read and Records may be
// called from the reading goroutine while it draws.
type Meter struct {
	w        io.Writer
	interval time.Duration
	now      func() time.Time

	total, read, records atomic.Int64
	start                time.Time
	stop, done           chan struct{}
	once                 sync.Once
	drawn                bool
}

// Interval is how often a Meter redraws.
const Interval = 250 * time.Millisecond

// New returns a meter drawing on w (a terminal: see IsTerminal).
func New(w io.Writer) *Meter {
	return &Meter{w: w, interval: Interval, now: time.Now}
}

// Begin starts the meter; total is the size of the inputs in bytes, < 0
// when unknown. The first line is drawn after one interval, so a short
// read shows nothing.
func (m *Meter) Begin(total int64) {
	m.total.Store(total)
	m.start = m.now()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.run()
}

// Read adds n bytes read.
func (m *Meter) Read(n int) { m.read.Add(int64(n)) }

// Records sets the records read so far.
func (m *Meter) Records(n int64) { m.records.Store(n) }

// End stops the meter and erases its line. It may be called more than
// once, and without Begin.
func (m *Meter) End() {
	m.once.Do(func() {
		if m.stop == nil {
			return
		}
		close(m.stop)
		<-m.done
		if m.drawn {
			fmt.Fprint(m.w, "\r\x1b[K")
		}
	})
}

func (m *Meter) run() {
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			// \r returns to the line's start, ESC [ K erases what a
			// longer previous line left.
			fmt.Fprint(m.w, "\r"+Render(m.State())+"\x1b[K")
			m.drawn = true
		}
	}
}

// State returns how far the reading has come.
func (m *Meter) State() State {
	return State{Read: m.read.Load(), Total: m.total.Load(), Records: m.records.Load(), Elapsed: m.now().Sub(m.start)}
}
