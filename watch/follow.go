package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
)

// Follow is a job over log files that grow: at each run it reads the lines
// appended since the last one, as tail -F does (a file renamed, replaced
// or truncated is followed: the rest of the old one is read, then the new
// one from its start), reduces them to interval logs (analysis.Summarize:
// one HDR histogram per group and minute, with its arrivals), keeps those
// of the last Window, and analyses the window (analysis.Run over the
// interval logs, which merge exactly: docs/interval-logs.md).
//
// Memory: the interval logs of the window, whose size grows with groups x
// minutes, never with the lines; the lines themselves are streamed from
// the files, never held.
type Follow struct {
	o      analysis.Options
	window time.Duration
	now    func() time.Time
	tails  []*tail
	chunks []chunk // oldest first
}

// chunk is the interval logs of one run's new lines.
type chunk struct {
	at   time.Time
	hlog []byte
}

// tail follows one file by name.
type tail struct {
	path   string
	f      *os.File
	off    int64  // the start of the first line not read yet
	header []byte // a CSV file's header line, read again before each part
	// mark is the last bytes before off: when they are no longer there,
	// the file was truncated and written again since the last read, to
	// off or beyond (copytruncate between two runs).
	mark []byte
}

// NewFollow follows files from their current ends (what they hold already
// is not read); a file that does not exist yet is read from its start once
// it does. o says how to read and analyse the lines, as for analyze
// (o.Inputs is ignored); CSV files need o.Format "csv", so that their
// header is read before each part. now is the clock (nil: time.Now).
func NewFollow(files []string, o analysis.Options, window time.Duration, now func() time.Time) (*Follow, error) {
	if len(files) == 0 {
		return nil, usage.About(usage.Follow, fmt.Errorf("%s: no file to follow", usage.Follow))
	}
	if window <= 0 {
		return nil, usage.About(usage.Window, fmt.Errorf("%s %v is not positive", usage.Window, window))
	}
	if now == nil {
		now = time.Now
	}
	f := &Follow{o: o, window: window, now: now}
	for _, p := range files {
		t := &tail{path: p}
		if err := t.open(true); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, err
		}
		f.tails = append(f.tails, t)
	}
	return f, nil
}

// Close closes the files followed.
func (f *Follow) Close() {
	for _, t := range f.tails {
		if t.f != nil {
			t.f.Close()
			t.f = nil
		}
	}
}

// Run reads the lines appended since the last run, adds them to the
// window, forgets what is older than the window, and analyses the window.
func (f *Follow) Run(ctx context.Context) (*report.Report, error) {
	now := f.now()
	var errs []error
	var part bytes.Buffer
	for _, t := range f.tails {
		if err := t.read(ctx, f.o, &part); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.path, err))
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if part.Len() > 0 {
		f.chunks = append(f.chunks, chunk{at: now, hlog: bytes.Clone(part.Bytes())})
	}
	keep := 0
	for keep < len(f.chunks) && !f.chunks[keep].at.After(now.Add(-f.window)) {
		keep++
	}
	f.chunks = append(f.chunks[:0], f.chunks[keep:]...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(f.chunks) == 0 {
		return nil, fmt.Errorf("%w: no line appended to the files followed in the last %s", analysis.ErrNothingToAnalyse, human.Duration(f.window))
	}
	readers := make([]io.Reader, len(f.chunks))
	for i, c := range f.chunks {
		readers[i] = bytes.NewReader(c.hlog)
	}
	// The interval logs carry their groups, latencies and status rule:
	// the reading options were applied when they were written.
	o := f.o
	o.Inputs, o.Format, o.Ingest, o.Status, o.From, o.To = []string{"-"}, "", ingest.Options{}, ingest.StatusRule{}, time.Time{}, time.Time{}
	r, err := analysis.Run(ctx, o, io.MultiReader(readers...))
	if err != nil {
		return nil, err
	}
	// What was read is the files followed, not the summaries in memory.
	r.Input.Files = r.Input.Files[:0]
	for _, t := range f.tails {
		r.Input.Files = append(r.Input.Files, t.path)
	}
	return r, nil
}

// Window is how many runs' interval logs the window holds and their bytes.
func (f *Follow) Window() (runs, bytes int) {
	for _, c := range f.chunks {
		bytes += len(c.hlog)
	}
	return len(f.chunks), bytes
}

// open opens the file by name: from the end of its last whole line when
// atEnd, else from its start.
func (t *tail) open(atEnd bool) error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	t.f, t.off, t.header, t.mark = f, 0, nil, nil
	if atEnd {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if t.off, err = lineEnd(f, 0, fi.Size()); err != nil {
			return err
		}
		return t.remember()
	}
	return nil
}

// markSize is how many bytes before the offset tell the file is the one
// read.
const markSize = 64

// remember keeps the bytes before t.off (mark).
func (t *tail) remember() error {
	n := min(t.off, markSize)
	t.mark = make([]byte, n)
	_, err := t.f.ReadAt(t.mark, t.off-n)
	return err
}

// marked tells whether the bytes before t.off are still those read.
func (t *tail) marked() bool {
	if len(t.mark) == 0 {
		return true
	}
	b := make([]byte, len(t.mark))
	_, err := t.f.ReadAt(b, t.off-int64(len(b)))
	return err == nil && bytes.Equal(b, t.mark)
}

// read adds to w the interval logs of the lines appended since the last
// read, following the name as tail -F does.
func (t *tail) read(ctx context.Context, o analysis.Options, w *bytes.Buffer) error {
	fi, statErr := os.Stat(t.path)
	if t.f != nil {
		cur, err := t.f.Stat()
		if err != nil {
			return err
		}
		switch {
		case statErr != nil || !os.SameFile(fi, cur):
			// Renamed, removed or replaced: what was written to the old
			// file before, whole, then the new one from its start.
			err := t.summarize(ctx, o, cur.Size(), w)
			t.f.Close()
			t.f = nil
			if err != nil {
				return err
			}
		case cur.Size() < t.off || !t.marked():
			// Truncated (copytruncate): from the start again.
			t.off, t.header, t.mark = 0, nil, nil
		}
	}
	if t.f == nil {
		if errors.Is(statErr, os.ErrNotExist) {
			return nil // not there (yet): tail -F waits for it
		}
		if statErr != nil {
			return statErr
		}
		if err := t.open(false); err != nil {
			return err
		}
	}
	cur, err := t.f.Stat()
	if err != nil {
		return err
	}
	// Up to the last whole line: a line being written is read next time.
	end, err := lineEnd(t.f, t.off, cur.Size())
	if err != nil {
		return err
	}
	return t.summarize(ctx, o, end, w)
}

// summarize adds to w the interval log of the bytes [t.off, end).
func (t *tail) summarize(ctx context.Context, o analysis.Options, end int64, w *bytes.Buffer) error {
	if end <= t.off {
		return nil
	}
	var in io.Reader = io.NewSectionReader(t.f, t.off, end-t.off)
	if o.Format == "csv" {
		if t.off == 0 {
			t.header = nil
		} else {
			if t.header == nil {
				h, err := firstLine(t.f)
				if err != nil {
					return err
				}
				t.header = h
			}
			in = io.MultiReader(bytes.NewReader(t.header), in)
		}
	}
	o.Inputs = []string{"-"}
	o.Progress = nil
	_, err := analysis.Summarize(ctx, o, analysis.DefaultInterval, in, w)
	t.off = end
	if merr := t.remember(); merr != nil && err == nil {
		err = merr
	}
	if errors.Is(err, analysis.ErrNothingToAnalyse) || errors.Is(err, ingest.ErrEmptyInput) {
		return nil // only blank lines, or a CSV header alone
	}
	return err
}

// maxLine bounds the search for the end of the last whole line.
const maxLine = 16 << 20

// lineEnd returns the offset just after the last line break in [from,
// size), from when there is none: the end of the whole lines. A last line
// longer than maxLine without a break is taken as it is.
func lineEnd(f *os.File, from, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for hi := size; hi > from; {
		lo := max(from, hi-int64(len(buf)))
		n, err := f.ReadAt(buf[:hi-lo], lo)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return lo + int64(i) + 1, nil
		}
		if size-lo > maxLine {
			return size, nil
		}
		hi = lo
	}
	return from, nil
}

// firstLine returns a file's first line with its line break.
func firstLine(f *os.File) ([]byte, error) {
	buf := make([]byte, 64<<10)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		return bytes.Clone(buf[:i+1]), nil
	}
	return append(bytes.Clone(buf[:n]), '\n'), nil
}
