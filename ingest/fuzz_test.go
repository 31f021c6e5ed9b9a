package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzOptions picks one of a few option sets, so that the fuzzer reaches
// the headerless, by-index and group-by paths as well as detection.
func fuzzOptions(opt uint8) CSVOptions {
	switch opt % 6 {
	case 1:
		return CSVOptions{Unit: time.Millisecond}
	case 2:
		return CSVOptions{By: []string{"route", "status"}}
	case 3:
		return CSVOptions{Column: "2", Unit: time.Second}
	case 4:
		return CSVOptions{Column: "3", TimeColumn: "1", StatusColumn: "2", By: []string{"2", "1"}, Unit: time.Nanosecond}
	case 5:
		return CSVOptions{Column: "latency", Unit: 100 * time.Microsecond, TimeColumn: "ts"}
	}
	return CSVOptions{}
}

// FuzzCSV checks that the CSV decoder never panics or loops, that its errors
// are io.EOF, a *ParseError with a line, or fatal only from NewCSV, that no
// sample has a negative latency, and that the accepted latencies survive
// being written out as a one-column latency_us CSV and read back.
func FuzzCSV(f *testing.F) {
	seeds := []string{
		"latency_ms\n12.5\n",
		"timestamp,route,status,latency_ms\n2024-10-27T03:33:20Z,/a,200,1\n1730000000.5,\"/b,c\",504,2\n",
		"ts,status,latency\n1730000000500,499,3\n",
		"duration_seconds\n0.25\n-1\nNaN\n1e400\n\n",
		"\xef\xbb\xbfelapsed_us\r\n1500\r\n\"2\"x\r\n",
		"5\n6\n7\n",
		"1730000000,200,12\n1730000001,503,13\n",
		"latency_ns\n9223372036854775807\n9223372036854775807.5\n",
		"route,latency_s\n\"a\nb\",1\n\"unterminated,2\n",
		"latency_s\n1.0000000000000000000001\n.5\n5.\n+0\n-0\n0x1p-2\n",
		"a,b\n1\n",
		"",
	}
	for _, s := range seeds {
		for opt := range uint8(6) {
			f.Add([]byte(s), opt)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, opt uint8) {
		d, err := NewCSV(bytes.NewReader(data), "fuzz.csv", fuzzOptions(opt))
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				t.Fatalf("NewCSV returned a row error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.csv: ") {
				t.Fatalf("NewCSV error does not name the input: %v", err)
			}
			return
		}
		var lats []time.Duration
		lastLine := 0
		for n := 0; ; n++ {
			if n > len(data)+2 {
				t.Fatalf("Next called %d times on %d bytes without io.EOF", n, len(data))
			}
			s, err := d.Next()
			if err == io.EOF {
				break
			}
			var pe *ParseError
			if errors.As(err, &pe) {
				if pe.Line < 1 || pe.Line < lastLine {
					t.Fatalf("error at line %d after line %d: %v", pe.Line, lastLine, pe)
				}
				lastLine = pe.Line
				if len(pe.Value) > maxValueLen+len("...") {
					t.Fatalf("value of %d bytes not cut: %v", len(pe.Value), pe)
				}
				if !strings.HasPrefix(pe.Error(), fmt.Sprintf("fuzz.csv:%d: ", pe.Line)) {
					t.Fatalf("bad error text: %v", pe)
				}
				continue
			}
			if err != nil {
				t.Fatalf("fatal error from Next on an in-memory input: %v", err)
			}
			if s.Latency < 0 {
				t.Fatalf("negative latency %v", s.Latency)
			}
			if s.Status < 0 || s.Status > 999 {
				t.Fatalf("status %d", s.Status)
			}
			lats = append(lats, s.Latency)
		}

		// Round trip: write the latencies in µs with three decimals (exact
		// to the ns) and read them back; they must come back the same.
		var b bytes.Buffer
		b.WriteString("latency_us\n")
		for _, l := range lats {
			fmt.Fprintf(&b, "%d.%03d\n", l/time.Microsecond, l%time.Microsecond)
		}
		d2, err := NewCSV(&b, "roundtrip.csv", CSVOptions{})
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		for i := 0; ; i++ {
			s, err := d2.Next()
			if err == io.EOF {
				if i != len(lats) {
					t.Fatalf("round trip: %d samples, want %d", i, len(lats))
				}
				break
			}
			if err != nil {
				t.Fatalf("round trip, sample %d: %v", i, err)
			}
			if i >= len(lats) || s.Latency != lats[i] {
				t.Fatalf("round trip, sample %d: got %v, want %v", i, s.Latency, lats[min(i, len(lats)-1)])
			}
		}
	})
}

// FuzzParseLatency checks the exact decimal reader against strconv: where
// both accept a value they agree to float64 precision, and they agree on
// which values are negative or not numbers at all.
func FuzzParseLatency(f *testing.F) {
	for _, s := range []string{"0", "12.5", "0.0000000015", "1730.000000001", "-3", "9223372036854775807",
		"9223372036854775.807", "18446744073709551615", ".5", "5.", "+1", "-0", "1.2.3", ""} {
		f.Add(s, int64(time.Millisecond))
	}
	f.Fuzz(func(t *testing.T, s string, unit int64) {
		if unit <= 0 {
			return
		}
		if _, ok := parseDecimal(s); !ok {
			return // read by strconv.ParseFloat itself
		}
		got, reason := parseLatency(s, time.Duration(unit))
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: strconv rejects a plain decimal: %v", s, err)
		}
		want := v * float64(unit)
		switch {
		case reason == reasonNegative:
			if !(v < 0) {
				t.Fatalf("%q: negative, strconv reads %v", s, v)
			}
		case reason == reasonRange:
			if want < 1<<63*(1-1e-15) {
				t.Fatalf("%q x %d: out of range, strconv gives %v", s, unit, want)
			}
		case reason != "":
			t.Fatalf("%q: %s", s, reason)
		default:
			if v < 0 && got != 0 {
				t.Fatalf("%q: negative read as %v", s, got)
			}
			if diff := math.Abs(float64(got) - want); diff > max(1, want*1e-15) {
				t.Fatalf("%q x %d: got %d ns, strconv gives %v", s, unit, got, want)
			}
		}
	})
}
