package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/tunetimeout/tunetimeout/internal/names"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceCSV decodes data as the CSV decoder did before it split lines
// itself: every row through encoding/csv, line numbers from FieldPos. It
// takes the columns from d, a decoder NewCSV made over the same data, and
// returns one line per row: the sample or the error.
func referenceCSV(t testing.TB, data []byte, d *csvDecoder) []string {
	t.Helper()
	data = bytes.TrimPrefix(data, utf8BOM)
	// The input's physical lines: a row whose quote does not close where a
	// row ends is bad for its first line only, and reading starts again,
	// with a new encoding/csv reader, on the line after it.
	lines := bytes.SplitAfter(data, []byte("\n"))
	starts := make([]int, len(lines)+1)
	for i, l := range lines {
		starts[i+1] = starts[i] + len(l)
	}
	var out []string
	first := true
	for base := 0; ; {
		cr := csv.NewReader(bytes.NewReader(data[starts[base]:]))
		cr.ReuseRecord = true
		cr.FieldsPerRecord = -1
		restart := false
		for !restart {
			rec, err := cr.Read()
			if err == io.EOF {
				return out
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				start := base + pe.StartLine // 1-based, in the whole input
				// A quote open at the end of the input: encoding/csv's error is
				// past the last line's last byte.
				atEnd := strings.TrimRight(string(bytes.Join(lines[start:], nil)), "\r\n") == "" &&
					pe.Column > len(bytes.TrimRight(lines[start-1], "\r\n"))
				reason := fmt.Sprintf("invalid CSV: %v (column %d)", pe.Err, pe.Column)
				switch {
				case pe.Line != pe.StartLine || errors.Is(pe.Err, csv.ErrQuote) && atEnd:
					reason = fmt.Sprintf("invalid CSV: %v: the quote opened on this line does not close where a row ends; this line is skipped and the next is read as a row (column %d)",
						pe.Err, openQuote(lines[start-1]))
					base, restart = start, true
				case pe.Line != pe.StartLine:
					reason = fmt.Sprintf("invalid CSV: %v (line %d, column %d)", pe.Err, base+pe.Line, pe.Column)
				}
				out = append(out, (&ParseError{File: d.name, Line: start, Reason: reason}).Error())
				first = false
				continue
			}
			require.NoError(t, err)
			if first {
				first = false
				if d.cols.names != nil {
					for i, f := range rec {
						require.Equal(t, strings.TrimSpace(f), d.cols.names[i], "header")
					}
					continue
				}
			}
			line := func(i int) int { l, _ := cr.FieldPos(i); return base + l }
			out = append(out, referenceRow(d, rec, line))
		}
	}
}

// referenceRow is the decoder's Next over one row read by encoding/csv.
func referenceRow(d *csvDecoder, rec []string, line func(int) int) string {
	fail := func(i int, v, reason string) string {
		return (&ParseError{File: d.name, Line: line(i), Field: d.cols.name(i), Value: displayValue(v), Reason: reason, Kind: "column"}).Error()
	}
	if len(rec) < d.need {
		return (&ParseError{File: d.name, Line: line(0), Reason: fmt.Sprintf("has %d fields, want at least %d", len(rec), d.need)}).Error()
	}
	var s Sample
	v := strings.TrimSpace(rec[d.lat])
	lat, reason := parseLatency(v, d.unit)
	if reason != "" {
		return fail(d.lat, v, reason)
	}
	s.Latency = lat
	if d.timeCol >= 0 {
		v := strings.TrimSpace(rec[d.timeCol])
		if v != "" && v != "-" {
			t, ok := parseTime(v)
			if !ok {
				return fail(d.timeCol, v, reasonTime)
			}
			s.Time = t
		}
	}
	if d.statusCol >= 0 {
		v := strings.TrimSpace(rec[d.statusCol])
		st, ok := parseStatus(v)
		if !ok {
			return fail(d.statusCol, v, reasonStatus)
		}
		s.Status = st
	}
	var g []string
	for _, i := range d.by {
		g = append(g, names.Value(strings.TrimSpace(rec[i])))
	}
	s.Group = names.Cap(strings.Join(g, " "))
	return sampleString(s)
}

func sampleString(s Sample) string {
	return fmt.Sprintf("%v %d %d %q", s.Latency, s.Time.UnixNano(), s.Status, s.Group)
}

// decodeRows runs the decoder d to the end, one line per row as
// referenceCSV writes them.
func decodeRows(t testing.TB, d Decoder) []string {
	t.Helper()
	var out []string
	for n := 0; ; n++ {
		require.Less(t, n, 1_000_000, "decoder does not end")
		s, err := d.Next()
		if err == io.EOF {
			return out
		}
		var pe *ParseError
		if errors.As(err, &pe) {
			out = append(out, pe.Error())
			continue
		}
		require.NoError(t, err)
		out = append(out, sampleString(s))
	}
}

var csvRowsSeeds = []string{
	"latency_ms\n12.5\n",
	"timestamp,route,status,latency_ms\n2024-10-27T03:33:20Z,/a,200,1\n1730000000.5,\"/b,c\",504,2\n",
	"route,latency_s\n\"a\nb\",1\n\"unterminated,2\n",
	"\xef\xbb\xbfelapsed_us\r\n1500\r\n\"2\"x\r\n",
	"latency_ms\n1\n2\"x\n3\n\"4\"\n\"5\"\"\",6\n",
	"latency_ms\r\n1\r\n\r\n\r\r\n2\r",
	"\n\n5\nabc\n\"6\n\"\n7",
	"note,latency_ms\n\"two\r\nlines\",abc\n5,1\n\"a\"\"b\",\"3\"\n",
	"ts,latency_ms\n2024-10-27 03:33:20.5Z,1\n2024-10-27 03:33:20.25Z,2\n2024-10-27T05:33:21+02:00,3\n2024-10-27T03:33:21.1234567891Z,4\n",
	"latency_ms,route\n1,\"a\n\n\nb\"\n2,c\n",
	"\"latency_ms\",\"route\"\n\"1\",\"a\"\n2,b\n",
}

// FuzzCSVRows checks the decoder, which splits lines without quotes
// itself, against encoding/csv reading every row: the same samples, and
// the same errors at the same lines, on any input.
func FuzzCSVRows(f *testing.F) {
	for _, s := range csvRowsSeeds {
		for opt := range uint8(6) {
			f.Add([]byte(s), opt)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, opt uint8) {
		dec, err := NewCSV(bytes.NewReader(data), "fuzz.csv", fuzzOptions(opt))
		if err != nil {
			return
		}
		got := decodeRows(t, dec)
		d, err := NewCSV(bytes.NewReader(data), "fuzz.csv", fuzzOptions(opt))
		require.NoError(t, err)
		want := referenceCSV(t, data, d.(*csvDecoder))
		require.Equal(t, want, got)
	})
}

// TestCSVRowsSmallBuffer reads lines longer than the reader's buffer, in
// and out of quotes, against encoding/csv.
func TestCSVRowsSmallBuffer(t *testing.T) {
	long := strings.Repeat("y", 200_000)
	input := "route,latency_ms\n" + long + ",1\n\"" + long + "\n" + long + "\",2\n" + long + "\"x,3\nz,4\n"
	d, err := NewCSV(strings.NewReader(input), "data.csv", CSVOptions{By: []string{"route"}})
	require.NoError(t, err)
	got := decodeRows(t, d)
	d2, err := NewCSV(strings.NewReader(input), "data.csv", CSVOptions{By: []string{"route"}})
	require.NoError(t, err)
	assert.Equal(t, referenceCSV(t, []byte(input), d2.(*csvDecoder)), got)
	require.Len(t, got, 4)
	assert.Equal(t, `data.csv:5: invalid CSV: bare " in non-quoted-field (column 200001)`, got[2])
}

// TestCSVNoAllocsPerRow pins the hot path: once the group table holds the
// routes, a row without quotes costs no allocation, timestamps included.
func TestCSVNoAllocsPerRow(t *testing.T) {
	input := csvBenchInput(2_000)
	d, err := NewCSV(strings.NewReader(input), "bench.csv", CSVOptions{By: []string{"route"}})
	require.NoError(t, err)
	dec := d.(*csvDecoder)
	lines := strings.SplitAfter(input, "\n")[1:]
	rows := []byte(strings.Join(lines, ""))
	read := func() {
		dec.Reset(rows, 2)
		for {
			_, err := dec.Next()
			if err == io.EOF {
				return
			}
			require.NoError(t, err)
		}
	}
	read()
	assert.Zero(t, testing.AllocsPerRun(5, read))
}

// TestLastSecond: the cache of the last second answers as parseTime does,
// fraction, zone and all, and only reuses a second whose zone matches.
func TestLastSecond(t *testing.T) {
	var c lastSecond
	for _, s := range []string{
		"2024-10-27T03:33:20Z", "2024-10-27T03:33:20.5Z", "2024-10-27T03:33:20.123456789Z", "2024-10-27T03:33:20.1234567891Z",
		"2024-10-27T03:33:20+02:00", "2024-10-27T03:33:20.25+02:00", "2024-10-27T03:33:20.25-01:30", "2024-10-27T03:33:20.Z",
		"2024-10-27 03:33:20.5Z", "2024-10-27 03:33:20.75Z", "2024-10-27T03:33:20.75z", "2024-10-27T03:33:20.5ZZ",
		"2024-10-27T03:33:21Z", "1730000000", "1730000000.5", "2024-10-27T03:33:20.5", "2024-10-27T03:33:60Z",
		// Found by FuzzSplitter: a one-digit hour moves the fraction; a
		// comma is a decimal point to time.Parse.
		"2024-10-27 3:33:20.5Z", "2024-10-27 3:33:20.5Z", "2024-10-27T03:33:20,5Z", "2024-10-27T03:33:20,5Z",
		"2024-10-27T03:33:20.5+0200", "2024-10-27T03:33:20.5+0200",
	} {
		want, wok := parseTime(s)
		got, gok := c.parse(s)
		require.Equal(t, wok, gok, s)
		assert.True(t, want.Equal(got), "%s: got %v, want %v", s, got, want)
	}
	assert.True(t, c.valid, "the cache holds a second")
}
