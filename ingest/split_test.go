package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rowString is one decoded row for comparisons: every field of the sample,
// or the error.
func rowString(s Sample, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%d %d %d %q %v %d %v %q", s.Latency, s.Time.UnixNano(), s.Status, s.Group, s.Censored, s.Connect, s.ConnectKnown, s.Excluded)
}

// decodeWhole reads data with NewDecoder to the end or to a fatal error.
func decodeWhole(format string, data io.Reader, o Options) (rows []string, err error) {
	d, err := NewDecoder(format, data, "in", o)
	if err != nil {
		return nil, err
	}
	return drain(d, rows)
}

func drain(d Decoder, rows []string) ([]string, error) {
	for {
		s, err := d.Next()
		if err == io.EOF {
			return rows, nil
		}
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			return rows, err
		}
		rows = append(rows, rowString(s, err))
	}
}

// decodeSplit reads data in chunks of about size bytes as parallel
// workers do, decoding the chunks in turn with two forked decoders taken
// in alternation, so that a decoder's state from one chunk meets another.
func decodeSplit(t *testing.T, format string, data io.Reader, o Options, size int) (rows []string, chunks int, err error) {
	t.Helper()
	sp, err := NewSplitter(format, data, "in", o, size)
	if err != nil {
		return nil, 0, err
	}
	var forks [2]ChunkDecoder
	for {
		c, err := sp.Next()
		if err == io.EOF {
			return rows, chunks, nil
		}
		if err != nil {
			return rows, chunks, err
		}
		require.Equal(t, chunks, c.Seq)
		chunks++
		dec := c.Decoder
		if dec == nil {
			f := &forks[c.Seq%2]
			if *f == nil {
				*f, err = sp.Fork()
				require.NoError(t, err)
			}
			(*f).Reset(c.Data, c.Line)
			dec = *f
		} else {
			require.True(t, c.Rest || c.Seq == 0, "a decoder comes with the first chunk or the rest")
		}
		rows, err = drain(dec, rows)
		sp.Release(c)
		if err != nil {
			return rows, chunks, err
		}
	}
}

// splitInputs are inputs with what makes cutting them hard: bad lines,
// quotes, blank lines, CRLF, no final line break, long lines.
func splitInputs(t *testing.T) map[string]struct {
	format string
	data   string
	o      Options
} {
	var csvRows strings.Builder
	csvRows.WriteString("timestamp,route,status,latency_ms\n")
	for i := range 400 {
		switch {
		case i%37 == 5:
			csvRows.WriteString("2024-10-27T03:33:20Z,/bad,200,abc\n")
		case i%53 == 7:
			csvRows.WriteString("\r\n\n")
		case i%71 == 9:
			csvRows.WriteString("2024-10-27T03:33:20Z,/short\n")
		default:
			fmt.Fprintf(&csvRows, "2024-10-27T03:%02d:%02d.%03dZ,/r%d,%d,%d.%d\r\n", i/60%60, i%60, i, i%7, 200+i%3*100, i, i%10)
		}
	}
	plain := csvRows.String()
	quotedLate := plain + "2024-10-27T03:33:20Z,\"/q,\n1\",200,5\n" + plain[strings.IndexByte(plain, '\n')+1:]
	nginx := string(accessLogBenchLines(500, false))
	nginxBad := strings.Replace(nginx, "\n", "\nnot a log line\n\n", 40)
	long := strings.Repeat("x", 3000)
	inputs := map[string]struct {
		format string
		data   string
		o      Options
	}{
		"csv":                       {"auto", plain, Options{By: []string{"route"}}},
		"csv without final newline": {"csv", strings.TrimSuffix(plain, "\r\n"), Options{By: []string{"route", "status"}}},
		"csv quoted late":           {"csv", quotedLate, Options{By: []string{"route"}}},
		"csv quoted header":         {"csv", "\"latency_ms\"\n" + strings.Repeat("1\n2\n", 200), Options{}},
		"csv headerless":            {"csv", "\n\n5\n" + strings.Repeat("7\nabc\n-1\n", 100), Options{Unit: 1e6}},
		"csv bom":                   {"auto", "\xef\xbb\xbflatency_ms\n" + strings.Repeat("3\n", 300), Options{}},
		"csv long line":             {"csv", "route,latency_ms\n" + strings.Repeat("/a,1\n"+long+",2\n", 20), Options{By: []string{"route"}}},
		"nginx":                     {"auto", nginx, Options{By: []string{"route"}}},
		"nginx bad lines":           {"nginx", nginxBad, Options{By: []string{"route", "method", "status_class"}, Latency: "upstream"}},
		"nginx long line":           {"nginx", strings.Replace(nginx, "\n", "\n"+strings.Repeat("y", 1<<20+5)+"\n", 3), Options{By: []string{"route"}}},
		"empty":                     {"auto", "", Options{}},
		"blank":                     {"auto", "\n \n\t\n", Options{}},
		"csv blank then header":     {"csv", strings.Repeat("\n", 300) + "latency_ms\n1\n", Options{}},
		"one line":                  {"csv", "latency_ms", Options{}},
	}
	files, err := filepath.Glob("testdata/conformance/*.log")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		inputs[filepath.Base(f)] = struct {
			format string
			data   string
			o      Options
		}{"auto", strings.Repeat(string(b), 20), Options{By: []string{"route", "status"}}}
	}
	return inputs
}

// TestSplitterMatchesWholeInput is the property the parallel reading rests
// on: decoding the chunks in turn gives the rows, errors and line numbers
// of decoding the whole input, whatever the chunk size.
func TestSplitterMatchesWholeInput(t *testing.T) {
	for name, in := range splitInputs(t) {
		want, wantErr := decodeWhole(in.format, strings.NewReader(in.data), in.o)
		for _, size := range []int{1, 10, 100, 1000, 1 << 16} {
			t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
				got, chunks, err := decodeSplit(t, in.format, strings.NewReader(in.data), in.o, size)
				if wantErr != nil {
					require.EqualError(t, err, wantErr.Error())
					return
				}
				require.NoError(t, err)
				require.Equal(t, want, got)
				if size == 100 && len(in.data) > 20_000 && !strings.Contains(name, "quoted") && !strings.Contains(name, "long") {
					assert.Greater(t, chunks, 10, "the input is cut")
				}
			})
		}
	}
}

// TestSplitterQuotedCSVReadWhole: once a block of CSV holds a quote, the
// rest of the input goes to one decoder, since a quoted field may hold a
// line break.
func TestSplitterQuotedCSVReadWhole(t *testing.T) {
	data := "latency_ms,note\n" + strings.Repeat("1,a\n", 100) + "2,\"b\nc\"\n" + strings.Repeat("3,d\n", 100)
	sp, err := NewSplitter("csv", strings.NewReader(data), "in", Options{}, 64)
	require.NoError(t, err)
	var last Chunk
	n := 0
	for {
		c, err := sp.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		last = c
		n++
	}
	assert.True(t, last.Rest)
	assert.Greater(t, n, 5)
	// The quote is on line 102; the rest starts at the block holding it.
	assert.LessOrEqual(t, last.Line, 102)
	assert.Greater(t, last.Line, 102-64/4)
}

// TestSplitterReadError: a read error reaches the decoder of the rest at
// the point where the input broke, as it would reading the input whole.
func TestSplitterReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	data := "latency_ms\n" + strings.Repeat("1\n", 500)
	in := func() io.Reader { return io.MultiReader(strings.NewReader(data), readErr{boom}) }
	want, wantErr := decodeWhole("csv", in(), Options{})
	require.ErrorIs(t, wantErr, boom)
	got, _, err := decodeSplit(t, "csv", in(), Options{}, 100)
	assert.Equal(t, wantErr.Error(), err.Error())
	assert.Equal(t, want, got)
}

// TestSplitterSniffsFirstLineOnly: as NewDecoder, the Splitter tells a
// format it cannot read from the first line alone, without waiting for a
// block of a slow pipe.
func TestSplitterSniffsFirstLineOnly(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("what is this\n"))
	_, err := NewSplitter("auto", pr, "-", Options{}, 0)
	require.ErrorContains(t, err, "cannot tell the input format")
}

// FuzzSplitter checks the property of TestSplitterMatchesWholeInput on any
// input, as CSV (where quotes stop the cutting) and as auto-detected logs.
func FuzzSplitter(f *testing.F) {
	for _, s := range csvRowsSeeds {
		f.Add([]byte(s), uint8(0), uint16(7))
	}
	f.Add(accessLogBenchLines(20, false), uint8(6), uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, opt uint8, size uint16) {
		format, o := "csv", Options{CSV: fuzzOptions(opt)}
		if opt%7 == 6 {
			format, o = "auto", Options{By: []string{"route"}}
		}
		want, wantErr := decodeWhole(format, bytes.NewReader(data), o)
		got, _, err := decodeSplit(t, format, bytes.NewReader(data), o, int(size%2000)+1)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error())
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}
