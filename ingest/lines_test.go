package ingest

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// msParser reads lines "METHOD PATH MILLISECONDS".
type msParser struct{}

func (msParser) Parse(line []byte, s *Sample, f *Fields) error {
	parts := bytes.Fields(line)
	if len(parts) != 3 {
		return &FieldError{Reason: "has " + strconv.Itoa(len(parts)) + " fields, want 3"}
	}
	f.Method, f.Path = parts[0], parts[1]
	ms, err := strconv.Atoi(string(parts[2]))
	if err != nil {
		return &FieldError{Field: "ms", Value: string(parts[2]), Reason: reasonNotNumber}
	}
	s.Latency = time.Duration(ms) * time.Millisecond
	return nil
}

// messages returns the errors' texts.
func messages(errs []*ParseError) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestLineDecoder(t *testing.T) {
	g, err := NewGrouper([]string{"method", "route"}, nil)
	require.NoError(t, err)
	in := "GET /a/1 10\r\n\n   \nPOST /b 20\nGET /a/2 abc\nbroken\nGET /a/3 30" // CRLF, blank lines, no final newline
	samples, errs := decodeAll(t, NewLineDecoder(strings.NewReader(in), "x.log", msParser{}, g))
	require.Len(t, samples, 3)
	assert.Equal(t, "GET /a/{id}", samples[0].Group)
	assert.Equal(t, 10*time.Millisecond, samples[0].Latency)
	assert.Equal(t, "POST /b", samples[1].Group)
	assert.Equal(t, 30*time.Millisecond, samples[2].Latency)
	assert.Equal(t, []string{
		`x.log:5: field "ms": "abc" is not a number`,
		`x.log:6: has 1 fields, want 3`,
	}, messages(errs))
}

func TestLineDecoderLongLines(t *testing.T) {
	long := "GET /" + strings.Repeat("a", 100<<10) + " 5\n" // longer than the reader's buffer
	huge := "GET /" + strings.Repeat("b", maxLine+10) + " 6\n"
	in := long + huge + "GET /c 7\n"
	samples, errs := decodeAll(t, NewLineDecoder(strings.NewReader(in), "x.log", msParser{}, nil))
	require.Len(t, samples, 2)
	assert.Equal(t, 5*time.Millisecond, samples[0].Latency, "a line longer than the buffer is assembled")
	assert.Equal(t, 7*time.Millisecond, samples[1].Latency, "the line after a skipped one keeps its number")
	assert.Equal(t, []string{"x.log:2: line is longer than 1 MiB"}, messages(errs))
}

func TestNewDecoderAuto(t *testing.T) {
	d, err := NewDecoder("auto", strings.NewReader("\n\nlatency_ms\n12\n"), "in", Options{})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	assert.Empty(t, errs)
	require.Len(t, samples, 1)
	assert.Equal(t, 12*time.Millisecond, samples[0].Latency)

	_, err = NewDecoder("auto", strings.NewReader(""), "in", Options{})
	assert.ErrorIs(t, err, ErrEmptyInput)
	_, err = NewDecoder("auto", strings.NewReader("\n \n"), "in", Options{})
	assert.EqualError(t, err, "in: holds only blank lines")
	_, err = NewDecoder("auto", strings.NewReader("hello world\n"), "in", Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `in: cannot tell the input format from its first line "hello world"; tried `)
	assert.Contains(t, err.Error(), "csv")
	_, err = NewDecoder("yaml", strings.NewReader("x"), "in", Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown input format "yaml" (known: auto, `)
}

// TestAutoDoesNotWaitForMore: auto-detection reads only up to the first
// line, so a slow pipe (tail -f) is sniffed as soon as that line arrives.
func TestAutoDoesNotWaitForMore(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte("\nlatency_ms\n12\n")) }() // and then nothing, for now
	done := make(chan error, 1)
	go func() {
		d, err := NewDecoder("auto", pr, "-", Options{})
		if err == nil {
			_, err = d.Next()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("auto-detection waits for more input than its first line")
	}
}

// TestAutoWithLogFormat: a log format given with --input auto says which
// server wrote the log, nginx ($variables) or Apache (%directives).
func TestAutoWithLogFormat(t *testing.T) {
	line := `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET /a HTTP/1.1" 200 0.123` + "\n"
	d, err := NewDecoder("auto", strings.NewReader(line), "in", Options{LogFormat: `$remote_addr [$time_local] "$request" $status $request_time`})
	require.NoError(t, err)
	s, err := d.Next()
	require.NoError(t, err)
	assert.Equal(t, 123*time.Millisecond, s.Latency)

	line = `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET /a HTTP/1.1" 200 123456` + "\n"
	d, err = NewDecoder("auto", strings.NewReader(line), "in", Options{LogFormat: `%h %t "%r" %>s %D`})
	require.NoError(t, err)
	s, err = d.Next()
	require.NoError(t, err)
	assert.Equal(t, 123456*time.Microsecond, s.Latency)
}
