package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeAll reads d to the end, splitting samples from row errors; a fatal
// error fails the test.
func decodeAll(t testing.TB, d Decoder) (samples []Sample, errs []*ParseError) {
	t.Helper()
	for n := 0; ; n++ {
		require.Less(t, n, 1_000_000, "decoder does not end")
		s, err := d.Next()
		if err == io.EOF {
			return samples, errs
		}
		var pe *ParseError
		if errors.As(err, &pe) {
			errs = append(errs, pe)
			continue
		}
		require.NoError(t, err)
		samples = append(samples, s)
	}
}

// decodeString runs NewCSV over input named "data.csv" and reads it all.
func decodeString(t testing.TB, input string, o CSVOptions) ([]Sample, []*ParseError) {
	t.Helper()
	d, err := NewCSV(strings.NewReader(input), "data.csv", o)
	require.NoError(t, err)
	return decodeAll(t, d)
}

func latencies(samples []Sample) []time.Duration {
	var ds []time.Duration
	for _, s := range samples {
		ds = append(ds, s.Latency)
	}
	return ds
}

func errorStrings(errs []*ParseError) []string {
	var ss []string
	for _, e := range errs {
		ss = append(ss, e.Error())
	}
	return ss
}

func TestCSVLatencyColumn(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		input string
		o     CSVOptions
		want  []time.Duration
	}{
		{"latency_ms", "latency_ms\n12.5\n", CSVOptions{}, []time.Duration{12500 * time.Microsecond}},
		{"latency_us", "latency_us\n1500\n", CSVOptions{}, []time.Duration{1500 * time.Microsecond}},
		{"latency_ns", "latency_ns\n1234\n", CSVOptions{}, []time.Duration{1234}},
		{"latency_s", "latency_s\n0.8\n", CSVOptions{}, []time.Duration{800 * ms}},
		{"duration_seconds", "duration_seconds\n0.25\n", CSVOptions{}, []time.Duration{250 * ms}},
		{"duration_millis", "duration_millis\n3\n", CSVOptions{}, []time.Duration{3 * ms}},
		{"elapsed_us", "elapsed_us\n1500\n", CSVOptions{}, []time.Duration{1500 * time.Microsecond}},
		{"elapsed_micros", "elapsed_micros\n7\n", CSVOptions{}, []time.Duration{7 * time.Microsecond}},
		{"response_time_s", "response_time_s\n1.5\n", CSVOptions{}, []time.Duration{1500 * ms}},
		{"response_time_ms", "response_time_ms\n40\n", CSVOptions{}, []time.Duration{40 * ms}},
		{"upper case", "LATENCY_MS\n2\n", CSVOptions{}, []time.Duration{2 * ms}},
		{"spaces and hyphens read as underscores", "Response-Time MS\n2\n", CSVOptions{}, []time.Duration{2 * ms}},
		{"among other columns", "route,status,latency_ms\n/a,200,5\n", CSVOptions{}, []time.Duration{5 * ms}},
		{"latency preferred over duration to its left", "duration_s,latency_ms\n1,5\n", CSVOptions{}, []time.Duration{5 * ms}},
		{"leftmost of the same name", "latency_s,latency_ms\n1,5\n", CSVOptions{}, []time.Duration{time.Second}},
		{"a longer name is not a latency", "latency_p99_ms,latency_ms\n9,5\n", CSVOptions{}, []time.Duration{5 * ms}},
		{"--column by name, any case", "latency_ms,upstream_s\n5,0.002\n", CSVOptions{Column: "UPSTREAM_S"}, []time.Duration{2 * ms}},
		{"--column by index, unit from its name", "route,t_ms\n/a,7\n", CSVOptions{Column: "2"}, []time.Duration{7 * ms}},
		{"--unit overrides the suffix", "latency_ms\n3\n", CSVOptions{Unit: time.Second}, []time.Duration{3 * time.Second}},
		{"--unit for a bare name", "latency\n3\n", CSVOptions{Unit: ms}, []time.Duration{3 * ms}},
		{"--column and --unit", "route,request_time\n/a,0.123\n", CSVOptions{Column: "request_time", Unit: time.Second}, []time.Duration{123 * ms}},
		{"headerless single column", "12\n0.5\n", CSVOptions{Unit: ms}, []time.Duration{12 * ms, 500 * time.Microsecond}},
		{"headerless by index", "1730000000,12\n1730000001,13\n", CSVOptions{Column: "2", Unit: ms}, []time.Duration{12 * ms, 13 * ms}},
		{"exponent", "latency_us\n1.5e3\n", CSVOptions{}, []time.Duration{1500 * time.Microsecond}},
		{"plus sign", "latency_ms\n+5\n", CSVOptions{}, []time.Duration{5 * ms}},
		{"negative zero", "latency_ms\n-0\n", CSVOptions{}, []time.Duration{0}},
		{"leading point", "latency_s\n.25\n", CSVOptions{}, []time.Duration{250 * ms}},
		{"decimal read exactly", "latency_s\n1730.000000001\n", CSVOptions{}, []time.Duration{1730*time.Second + 1}},
		{"rounded to the nearest ns, half up", "latency_s\n0.0000000015\n0.0000000014\n", CSVOptions{}, []time.Duration{2, 1}},
		{"largest duration", "latency_ns\n9223372036854775807\n", CSVOptions{}, []time.Duration{1<<63 - 1}},
		{"spaces around values", "latency_ms , status\n 12 , 200 \n", CSVOptions{}, []time.Duration{12 * ms}},
		{"quoted", "\"latency_ms\"\n\"12.5\"\n", CSVOptions{}, []time.Duration{12500 * time.Microsecond}},
		{"blank lines skipped", "latency_ms\n\n1\n\n2\n", CSVOptions{}, []time.Duration{ms, 2 * ms}},
		{"no final newline", "latency_ms\n1\n2", CSVOptions{}, []time.Duration{ms, 2 * ms}},
		{"CRLF", "latency_ms,status\r\n1,200\r\n2,200\r\n", CSVOptions{}, []time.Duration{ms, 2 * ms}},
		{"BOM before the header", "\xef\xbb\xbflatency_ms\n5\n", CSVOptions{}, []time.Duration{5 * ms}},
		{"BOM before a quoted header", "\xef\xbb\xbf\"latency_ms\",status\n5,200\n", CSVOptions{}, []time.Duration{5 * ms}},
		{"BOM before headerless data", "\xef\xbb\xbf5\n", CSVOptions{Unit: ms}, []time.Duration{5 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, errs := decodeString(t, tt.input, tt.o)
			assert.Empty(t, errorStrings(errs))
			assert.Equal(t, tt.want, latencies(samples))
		})
	}
}

func TestCSVFatalErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		o     CSVOptions
		want  string
	}{
		{"empty", "", CSVOptions{}, "data.csv: empty input"},
		{"only blank lines and a BOM", "\xef\xbb\xbf\n\r\n\n", CSVOptions{}, "data.csv: empty input"},
		{"no latency column", "route,status\n/a,200\n", CSVOptions{},
			`data.csv: no latency column among "route", "status"; looked for latency, duration, elapsed, response_time, each alone or with a unit suffix (_ms, _us, _s, _seconds, ...); name it with --column`},
		{"no unit", "route,latency\n/a,5\n", CSVOptions{},
			`data.csv: unknown unit of the latency: column "latency" has no unit suffix (_ms, _us, _s, ...); pass --unit (ns, us, ms or s)`},
		{"no unit for --column", "route,request_time\n/a,5\n", CSVOptions{Column: "request_time"},
			`data.csv: unknown unit of the latency: column "request_time" has no unit suffix (_ms, _us, _s, ...); pass --unit (ns, us, ms or s)`},
		{"headerless without unit", "5\n6\n", CSVOptions{},
			"data.csv: unknown unit of the latency: the input has no header row to name the unit; pass --unit (ns, us, ms or s)"},
		{"headerless with two columns", "1,2\n", CSVOptions{Unit: time.Millisecond},
			"data.csv: the input has no header row (its first row is all numbers) and 2 columns; give the latency column's 1-based index with --column"},
		{"headerless --column by name", "5\n", CSVOptions{Column: "latency", Unit: time.Millisecond},
			`data.csv: --column column "latency" not found: the input has no header row (its first row is all numbers), so name columns by 1-based index, 1 to 1`},
		{"missing --column", "route,latency_ms\n/a,1\n", CSVOptions{Column: "upstream_ms"},
			`data.csv: --column column "upstream_ms" not found; the columns are "route", "latency_ms"`},
		{"--column index out of range", "route,latency_ms\n/a,1\n", CSVOptions{Column: "3"},
			`data.csv: --column column "3" not found; the columns are "route", "latency_ms"`},
		{"missing --by", "route,latency_ms\n/a,1\n", CSVOptions{By: []string{"route", "region"}},
			`data.csv: --by column "region" not found; the columns are "route", "latency_ms"`},
		{"missing --time-column", "route,latency_ms\n/a,1\n", CSVOptions{TimeColumn: "when"},
			`data.csv: --time-column column "when" not found; the columns are "route", "latency_ms"`},
		{"missing --status-column", "route,latency_ms\n/a,1\n", CSVOptions{StatusColumn: "http_status"},
			`data.csv: --status-column column "http_status" not found; the columns are "route", "latency_ms"`},
		{"syntax error in the header", "lat\"ency_ms\n1\n", CSVOptions{},
			`data.csv: first row: parse error on line 1, column 4: bare " in non-quoted-field`},
		{"negative unit", "latency_ms\n1\n", CSVOptions{Unit: -time.Second}, "data.csv: unit -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewCSV(strings.NewReader(tt.input), "data.csv", tt.o)
			require.Error(t, err)
			assert.Nil(t, d)
			assert.Equal(t, tt.want, err.Error())
			var pe *ParseError
			assert.False(t, errors.As(err, &pe), "a fatal error must not look like a skipped row")
		})
	}
}

func TestCSVEmptyIsErrEmptyInput(t *testing.T) {
	_, err := NewCSV(strings.NewReader(""), "-", CSVOptions{})
	assert.ErrorIs(t, err, ErrEmptyInput)
	assert.EqualError(t, err, "-: empty input")
}

func TestCSVColumnListIsCut(t *testing.T) {
	var names []string
	for i := range 25 {
		names = append(names, fmt.Sprintf("c%d", i))
	}
	_, err := NewCSV(strings.NewReader(strings.Join(names, ",")+"\n"), "wide.csv", CSVOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"c18", "c19", and 5 more; looked for`)
}

func TestCSVHeaderOnly(t *testing.T) {
	for _, input := range []string{"latency_ms\n", "latency_ms", "route,status,latency_ms\r\n\r\n"} {
		d, err := NewCSV(strings.NewReader(input), "data.csv", CSVOptions{})
		require.NoError(t, err, input)
		_, err = d.Next()
		assert.Equal(t, io.EOF, err, input)
		_, err = d.Next()
		assert.Equal(t, io.EOF, err, "io.EOF again after the end")
	}
}

func TestCSVTimestamps(t *testing.T) {
	instant := time.Unix(1730000000, 500_000_000)
	tests := []struct {
		name  string
		value string
		want  time.Time
	}{
		{"RFC 3339 with fraction", "2024-10-27T03:33:20.5Z", instant},
		{"RFC 3339 nano", "2024-10-27T03:33:20.500000000Z", instant},
		{"RFC 3339 with offset", "2024-10-27T05:33:20.5+02:00", instant},
		{"RFC 3339 with a space", "2024-10-27 03:33:20.5Z", instant},
		{"RFC 3339 without fraction", "2024-10-27T03:33:20Z", time.Unix(1730000000, 0)},
		{"Unix seconds", "1730000000", time.Unix(1730000000, 0)},
		{"Unix seconds with fraction", "1730000000.5", instant},
		{"Unix seconds, ns read exactly", "1730000000.123456789", time.Unix(1730000000, 123456789)},
		{"Unix milliseconds", "1730000000500", instant},
		{"Unix milliseconds with fraction", "1730000000500.25", instant.Add(250 * time.Microsecond)},
		{"Unix seconds with exponent", "1.7300000005e9", instant},
		{"smallest milliseconds", "100000000000", time.UnixMilli(1e11)},
		{"largest seconds", "99999999999", time.Time{}}, // year 5138: beyond time.Duration, rejected below
		{"empty", "", time.Time{}},
		{"dash", "-", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, errs := decodeString(t, "timestamp,latency_ms\n"+tt.value+",1\n", CSVOptions{})
			if tt.name == "largest seconds" {
				require.Len(t, errs, 1)
				assert.Equal(t, reasonTime, errs[0].Reason)
				return
			}
			require.Empty(t, errorStrings(errs))
			require.Len(t, samples, 1)
			assert.True(t, tt.want.Equal(samples[0].Time), "got %v, want %v", samples[0].Time, tt.want)
			assert.Equal(t, time.Millisecond, samples[0].Latency)
		})
	}
}

func TestCSVBadTimestamps(t *testing.T) {
	for _, v := range []string{"yesterday", "2024-10-27", "2024-10-27T03:33:20", "-5", "1e300", "NaN", "2024-13-01T00:00:00Z", "12:00"} {
		_, errs := decodeString(t, "ts,latency_ms\n"+v+",1\n", CSVOptions{})
		require.Len(t, errs, 1, v)
		assert.Equal(t, fmt.Sprintf(`data.csv:2: column "ts": %q is not a timestamp (RFC 3339, Unix seconds or milliseconds)`, v), errs[0].Error())
	}
}

func TestCSVTimeColumnNames(t *testing.T) {
	want := time.Unix(1730000000, 0)
	tests := []struct {
		name   string
		header string
		o      CSVOptions
	}{
		{"timestamp", "timestamp", CSVOptions{}},
		{"time", "time", CSVOptions{}},
		{"ts", "TS", CSVOptions{}},
		{"date", "date", CSVOptions{}},
		{"datetime", "datetime", CSVOptions{}},
		{"--time-column", "when", CSVOptions{TimeColumn: "When"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, errs := decodeString(t, tt.header+",latency_ms\n1730000000,1\n", tt.o)
			require.Empty(t, errorStrings(errs))
			require.Len(t, samples, 1)
			assert.True(t, want.Equal(samples[0].Time))
		})
	}
	t.Run("none", func(t *testing.T) {
		samples, _ := decodeString(t, "when,latency_ms\n1730000000,1\n", CSVOptions{})
		require.Len(t, samples, 1)
		assert.True(t, samples[0].Time.IsZero())
	})
}

func TestCSVStatus(t *testing.T) {
	tests := []struct {
		name   string
		header string
		value  string
		o      CSVOptions
		want   int
		err    string
	}{
		{"status", "status", "200", CSVOptions{}, 200, ""},
		{"status_code", "status_code", "504", CSVOptions{}, 504, ""},
		{"code", "Code", "499", CSVOptions{}, 499, ""},
		{"--status-column", "http_status", "404", CSVOptions{StatusColumn: "http_status"}, 404, ""},
		{"not detected", "http_status", "404", CSVOptions{}, 0, ""},
		{"empty is unknown", "status", "", CSVOptions{}, 0, ""},
		{"dash is unknown", "status", "-", CSVOptions{}, 0, ""},
		{"letters", "status", "OK", CSVOptions{}, 0, `data.csv:2: column "status": "OK" is not a status code`},
		{"four digits", "status", "2000", CSVOptions{}, 0, `data.csv:2: column "status": "2000" is not a status code`},
		{"negative", "status", "-1", CSVOptions{}, 0, `data.csv:2: column "status": "-1" is not a status code`},
		{"fraction", "status", "200.0", CSVOptions{}, 0, `data.csv:2: column "status": "200.0" is not a status code`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, errs := decodeString(t, tt.header+",latency_ms\n"+tt.value+",1\n", tt.o)
			if tt.err != "" {
				assert.Empty(t, samples)
				assert.Equal(t, []string{tt.err}, errorStrings(errs))
				return
			}
			require.Empty(t, errorStrings(errs))
			require.Len(t, samples, 1)
			assert.Equal(t, tt.want, samples[0].Status)
		})
	}
}

func TestCSVGroups(t *testing.T) {
	input := "timestamp,route,method,status,latency_ms\n" +
		"2024-10-27T03:33:20Z,/a,GET,200,1\n" +
		"2024-10-27T03:33:21Z,\"/search?q=a,b\",POST,504,2\n" +
		"2024-10-27T03:33:22Z,/a,GET,200,3\n" +
		"2024-10-27T03:33:23Z,\"say \"\"hi\"\"\",GET,200,4\n"
	samples, errs := decodeString(t, input, CSVOptions{By: []string{"route", "Method"}})
	require.Empty(t, errorStrings(errs))
	require.Len(t, samples, 4)
	// A value with a quote (or a space) is quoted, so that the name stands
	// for one list of values (names.Value).
	assert.Equal(t, []string{"/a GET", "/search?q=a,b POST", "/a GET", `"say \"hi\"" GET`},
		[]string{samples[0].Group, samples[1].Group, samples[2].Group, samples[3].Group})
	assert.Equal(t, []int{200, 504, 200, 200},
		[]int{samples[0].Status, samples[1].Status, samples[2].Status, samples[3].Status})
	assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond}, latencies(samples))
	assert.False(t, samples[1].Censored, "the decoder reads statuses; StatusRule censors")
	// One string per distinct group: the second "/a GET" is the first one.
	assert.Equal(t, unsafe.StringData(samples[0].Group), unsafe.StringData(samples[2].Group))

	t.Run("no by", func(t *testing.T) {
		samples, _ := decodeString(t, input, CSVOptions{})
		require.Len(t, samples, 4)
		assert.Equal(t, "", samples[1].Group)
	})
	t.Run("by index without a header", func(t *testing.T) {
		samples, _ := decodeString(t, "7,1\n8,2\n7,3\n", CSVOptions{Column: "2", Unit: time.Millisecond, By: []string{"1"}})
		require.Len(t, samples, 3)
		assert.Equal(t, []string{"7", "8", "7"}, []string{samples[0].Group, samples[1].Group, samples[2].Group})
	})
}

func TestCSVRowErrors(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name  string
		input string
		want  []string
		lat   []time.Duration // the samples around the bad row
	}{
		{"not a number", "latency_ms\n1\nabc\n2\n",
			[]string{`data.csv:3: column "latency_ms": "abc" is not a number`}, []time.Duration{1e6, 2e6}},
		{"negative", "latency_ms\n-3\n",
			[]string{`data.csv:2: column "latency_ms": "-3" is negative`}, nil},
		{"negative exponent form", "latency_ms\n-3e2\n",
			[]string{`data.csv:2: column "latency_ms": "-3e2" is negative`}, nil},
		{"NaN", "latency_ms\nNaN\n",
			[]string{`data.csv:2: column "latency_ms": "NaN" is not a finite number`}, nil},
		{"Inf", "latency_ms\n+Inf\n",
			[]string{`data.csv:2: column "latency_ms": "+Inf" is not a finite number`}, nil},
		{"empty", "status,latency_ms\n200,\n",
			[]string{`data.csv:2: column "latency_ms": "" is empty`}, nil},
		{"blank", "status,latency_ms\n200,  \n",
			[]string{`data.csv:2: column "latency_ms": "" is empty`}, nil},
		{"dash", "latency_ms\n-\n",
			[]string{`data.csv:2: column "latency_ms": "-" is not a number`}, nil},
		{"two points", "latency_ms\n1.2.3\n",
			[]string{`data.csv:2: column "latency_ms": "1.2.3" is not a number`}, nil},
		{"with unit", "latency_ms\n12ms\n",
			[]string{`data.csv:2: column "latency_ms": "12ms" is not a number`}, nil},
		{"beyond float64", "latency_ms\n1e400\n",
			[]string{`data.csv:2: column "latency_ms": "1e400" is out of range`}, nil},
		{"beyond time.Duration", "latency_s\n1e300\n",
			[]string{`data.csv:2: column "latency_s": "1e300" is out of range`}, nil},
		{"one ns beyond time.Duration", "latency_ns\n9223372036854775808\n",
			[]string{`data.csv:2: column "latency_ns": "9223372036854775808" is out of range`}, nil},
		{"integer beyond 64 bits", "latency_ms\n99999999999999999999999\n",
			[]string{`data.csv:2: column "latency_ms": "99999999999999999999999" is out of range`}, nil},
		{"fraction carries beyond time.Duration", "latency_ns\n9223372036854775807.5\n",
			[]string{`data.csv:2: column "latency_ns": "9223372036854775807.5" is out of range`}, nil},
		{"long value cut", "latency_ms\n" + long + "\n",
			[]string{`data.csv:2: column "latency_ms": "` + long[:64] + `..." is not a number`}, nil},
		{"short row", "timestamp,route,status,latency_ms\n1730000000,/a,200,1\n5\n1730000000,/a,200,2\n",
			[]string{"data.csv:3: has 1 fields, want at least 4"}, []time.Duration{1e6, 2e6}},
		{"first bad field wins", "status,latency_ms\nabc,xyz\n",
			[]string{`data.csv:2: column "latency_ms": "xyz" is not a number`}, nil},
		{"bare quote", "latency_ms\n1\n2\"x\n3\n",
			[]string{`data.csv:3: invalid CSV: bare " in non-quoted-field (column 2)`}, []time.Duration{1e6, 3e6}},
		{"text after a closing quote", "latency_ms\n1\n\"2\"x\n3\n",
			[]string{`data.csv:3: invalid CSV: extraneous or missing " in quoted-field (column 3)`}, []time.Duration{1e6, 3e6}},
		// The quote opened on line 3 is never closed: line 3 alone is bad,
		// and the rows after it are read.
		{"unterminated quote loses only its line", "latency_ms\n1\n\"2\n3\n4\n",
			[]string{`data.csv:3: invalid CSV: extraneous or missing " in quoted-field: the quote opened on this line does not close where a row ends; this line is skipped and the next is read as a row (column 1)`}, []time.Duration{1e6, 3e6, 4e6}},
		{"a stray quote closed by another", "latency_ms\n1\n\"2\n3\n4\"x\n5\n",
			[]string{`data.csv:3: invalid CSV: extraneous or missing " in quoted-field: the quote opened on this line does not close where a row ends; this line is skipped and the next is read as a row (column 1)`,
				`data.csv:5: invalid CSV: bare " in non-quoted-field (column 2)`}, []time.Duration{1e6, 3e6, 5e6}},
		{"a line longer than 1 MiB", "latency_ms\n1\n" + strings.Repeat("9", maxLine+5) + "\n2\n",
			[]string{`data.csv:3: line is longer than 1 MiB`}, []time.Duration{1e6, 2e6}},

		{"field after a line break in quotes", "note,latency_ms\n\"two\nlines\",abc\n5,1\n",
			[]string{`data.csv:3: column "latency_ms": "abc" is not a number`}, []time.Duration{1e6}},
		{"CRLF line numbers", "latency_ms\r\n1\r\nx\r\n\r\n-1\r\n",
			[]string{`data.csv:3: column "latency_ms": "x" is not a number`, `data.csv:5: column "latency_ms": "-1" is negative`}, []time.Duration{1e6}},
		{"headerless: first row counts, lines after blanks", "\n\n5\nabc\n",
			[]string{`data.csv:4: column "1": "abc" is not a number`}, []time.Duration{5e6}},
		{"headerless first row itself bad", "-5\n",
			[]string{`data.csv:1: column "1": "-5" is negative`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CSVOptions{}
			if !strings.Contains(tt.input, "_") {
				o.Unit = time.Millisecond
			}
			samples, errs := decodeString(t, tt.input, o)
			assert.Equal(t, tt.want, errorStrings(errs))
			assert.Equal(t, tt.lat, latencies(samples))
			for _, e := range errs {
				assert.Equal(t, "data.csv", e.File)
			}
		})
	}
}

func TestCSVGarbageRows(t *testing.T) {
	// 200 rows, every tenth bad in a different way: exactly 20 errors, 180
	// samples, and the first error names line 11 (the header is line 1).
	garbage := []string{
		"2024-10-27T03:33:20Z,/a,200,abc",
		"2024-10-27T03:33:20Z,/a,200,-1",
		"2024-10-27T03:33:20Z,/a,OK,5",
		"yesterday,/a,200,5",
		"2024-10-27T03:33:20Z,/a",
		"2024-10-27T03:33:20Z,/a\"b,200,5",
		"2024-10-27T03:33:20Z,/a,200,",
	}
	var b strings.Builder
	b.WriteString("timestamp,route,status,latency_ms\n")
	var want []time.Duration
	for i := 1; i <= 200; i++ {
		if i%10 == 0 {
			b.WriteString(garbage[(i/10)%len(garbage)] + "\n")
			continue
		}
		fmt.Fprintf(&b, "2024-10-27T03:33:%02dZ,/r%d,200,%d.%d\n", i%60, i%3, i, i%10)
		want = append(want, time.Duration(i)*time.Millisecond+time.Duration(i%10)*100*time.Microsecond)
	}
	samples, errs := decodeString(t, b.String(), CSVOptions{By: []string{"route"}})
	require.Len(t, errs, 20)
	assert.Equal(t, want, latencies(samples))
	assert.Equal(t, `data.csv:11: column "latency_ms": "-1" is negative`, errs[0].Error())
	assert.Equal(t, `data.csv:21: column "status": "OK" is not a status code`, errs[1].Error())
	assert.Equal(t, `data.csv:31: column "timestamp": "yesterday" is not a timestamp (RFC 3339, Unix seconds or milliseconds)`, errs[2].Error())
	assert.Equal(t, `data.csv:41: has 2 fields, want at least 4`, errs[3].Error())
	assert.Equal(t, `data.csv:51: invalid CSV: bare " in non-quoted-field (column 24)`, errs[4].Error())
	assert.Equal(t, `data.csv:61: column "latency_ms": "" is empty`, errs[5].Error())
	assert.Equal(t, 201, errs[19].Line)
}

func TestParseErrorFormat(t *testing.T) {
	e := &ParseError{File: "data.csv", Line: 17, Field: "latency_ms", Value: "abc", Reason: "is not a number", Kind: "column"}
	assert.Equal(t, `data.csv:17: column "latency_ms": "abc" is not a number`, e.Error())
	e = &ParseError{File: "access.log", Line: 3, Field: "request_time", Value: "abc", Reason: "is not a number"}
	assert.Equal(t, `access.log:3: field "request_time": "abc" is not a number`, e.Error())
	e = &ParseError{File: "-", Line: 3, Reason: "has 2 fields, want at least 4"}
	assert.Equal(t, "-:3: has 2 fields, want at least 4", e.Error())
}

func TestDisplayValue(t *testing.T) {
	assert.Equal(t, "abc", displayValue("abc"))
	assert.Equal(t, strings.Repeat("a", 64), displayValue(strings.Repeat("a", 64)))
	assert.Equal(t, strings.Repeat("a", 64)+"...", displayValue(strings.Repeat("a", 65)))
	// Cut on a rune boundary: 63 ASCII bytes then a 2-byte rune straddling 64.
	assert.Equal(t, strings.Repeat("a", 63)+"...", displayValue(strings.Repeat("a", 63)+"éé"))
}

// errReader fails every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestCSVReadErrorIsFatal(t *testing.T) {
	boom := errors.New("disk on fire")
	d, err := NewCSV(io.MultiReader(strings.NewReader("latency_ms\n1\n"), errReader{boom}), "data.csv", CSVOptions{})
	require.NoError(t, err)
	s, err := d.Next()
	require.NoError(t, err)
	assert.Equal(t, time.Millisecond, s.Latency)
	_, err = d.Next()
	require.ErrorIs(t, err, boom)
	var pe *ParseError
	assert.False(t, errors.As(err, &pe))
	assert.EqualError(t, err, "data.csv: disk on fire")
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestCSVStreams(t *testing.T) {
	input := "latency_ms\n" + strings.Repeat("1.5\n", 1<<20) // 4 MiB
	cr := &countingReader{r: strings.NewReader(input)}
	d, err := NewCSV(cr, "big.csv", CSVOptions{})
	require.NoError(t, err)
	for range 3 {
		s, err := d.Next()
		require.NoError(t, err)
		require.Equal(t, 1500*time.Microsecond, s.Latency)
	}
	assert.LessOrEqual(t, cr.n, 128<<10, "read %d bytes for three rows", cr.n)
}

func TestParseUnit(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"ns", time.Nanosecond, ""},
		{"us", time.Microsecond, ""},
		{"µs", time.Microsecond, ""},
		{"MS", time.Millisecond, ""},
		{"millis", time.Millisecond, ""},
		{"s", time.Second, ""},
		{"seconds", time.Second, ""},
		{"100us", 100 * time.Microsecond, ""},
		{"minutes", 0, `unknown unit "minutes": want ns, us, ms or s`},
		{"-1s", 0, `unknown unit "-1s": want ns, us, ms or s`},
		{"", 0, `unknown unit "": want ns, us, ms or s`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseUnit(tt.in)
			if tt.err != "" {
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func ExampleNewCSV() {
	input := "timestamp,route,status,latency_ms\n" +
		"2024-10-27T03:33:20Z,/search,200,12.5\n" +
		"2024-10-27T03:33:21Z,/search,504,1000\n" +
		"2024-10-27T03:33:22Z,/cart,200,oops\n"
	d, err := NewCSV(strings.NewReader(input), "data.csv", CSVOptions{By: []string{"route"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	var rule StatusRule
	for {
		s, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("skipped:", err)
			continue
		}
		excluded := rule.Classify(&s)
		fmt.Println(s.Group, s.Status, s.Latency, s.Censored, excluded == "")
	}
	// Output:
	// /search 200 12.5ms false true
	// /search 504 1s true true
	// skipped: data.csv:4: column "latency_ms": "oops" is not a number
}

// csvBenchInput is a CSV of rows rows: an RFC 3339 timestamp advancing
// 2.5 ms a row, five routes, a status (every 50th a 503) and a latency.
func csvBenchInput(rows int) string {
	var sb strings.Builder
	sb.WriteString("timestamp,route,status,latency_ms\n")
	routes := []string{"/search", "/cart", "/checkout", "/login", "/api/v1/items"}
	start := time.Date(2024, 10, 27, 3, 33, 20, 0, time.UTC)
	for i := range rows {
		ts := start.Add(time.Duration(i) * 2500 * time.Microsecond).Format(time.RFC3339Nano)
		status := 200
		if i%50 == 0 {
			status = 503
		}
		fmt.Fprintf(&sb, "%s,%s,%d,%d.%03d\n", ts, routes[i%len(routes)], status, 5+i%200, i%1000)
	}
	return sb.String()
}

// BenchmarkCSV decodes 10,000 rows grouped by route. The steady state
// allocates nothing per row: the allocations per op are the decoder's own.
func BenchmarkCSV(b *testing.B) {
	const rows = 10_000
	benchCSV(b, csvBenchInput(rows), rows)
}

// BenchmarkCSVQuoted is BenchmarkCSV with every field quoted, as some
// exporters write them: each row goes through encoding/csv.
func BenchmarkCSVQuoted(b *testing.B) {
	const rows = 10_000
	var sb strings.Builder
	for _, line := range strings.SplitAfter(csvBenchInput(rows), "\n") {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		sb.WriteString(`"` + strings.ReplaceAll(line, ",", `","`) + "\"\n")
	}
	benchCSV(b, sb.String(), rows)
}

func benchCSV(b *testing.B, input string, rows int) {
	benchDecode(b, len(input), rows, func() (Decoder, error) {
		return NewCSV(strings.NewReader(input), "bench.csv", CSVOptions{By: []string{"route"}})
	})
}

// TestCSVQuotedRowCap: a quote that opens a field of more than 1 MiB of
// lines ends the row there: its first line is bad, and every line it took
// is read again as a row of its own, so nothing is lost and nothing is held
// beyond the cap.
func TestCSVQuotedRowCap(t *testing.T) {
	n := maxQuotedRow/2 + 5
	in := "latency_ms\n1\n\"" + strings.Repeat("9\n", n) + "\"\n"
	dec, err := NewDecoder("csv", strings.NewReader(in), "data.csv", Options{})
	require.NoError(t, err)
	var samples int
	var bad []string
	for {
		_, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		samples++
	}
	assert.Equal(t, n, samples, "the first row and every line the quote took but its first")
	require.Len(t, bad, 2)
	assert.Equal(t, `data.csv:3: invalid CSV: the row's quoted fields span more than 1 MiB (column 1)`, bad[0])
	assert.Contains(t, bad[1], fmt.Sprintf("data.csv:%d:", 3+n), "the closing quote, alone on its line")
}

// TestCSVQuoteBeforeALongLine: a quote left open before a line longer than
// the cap is bad for its own line, and the long line is counted bad in its
// turn: no line is lost.
func TestCSVQuoteBeforeALongLine(t *testing.T) {
	in := "latency_ms\n5\n\"x\n" + strings.Repeat("a", 3<<20) + "\n7\n9\n"
	dec, err := NewDecoder("csv", strings.NewReader(in), "data.csv", Options{})
	require.NoError(t, err)
	var samples []time.Duration
	var bad []string
	for {
		s, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		samples = append(samples, s.Latency)
	}
	assert.Equal(t, []time.Duration{5 * time.Millisecond, 7 * time.Millisecond, 9 * time.Millisecond}, samples)
	assert.Equal(t, []string{
		`data.csv:3: invalid CSV: extraneous or missing " in quoted-field: the quote opened on this line does not close where a row ends; this line is skipped and the next is read as a row (column 1)`,
		`data.csv:4: line is longer than 1 MiB`,
	}, bad)
}

func TestOpenQuote(t *testing.T) {
	for line, want := range map[string]int{
		`"x`:               1,
		`"a",5,"b`:         7,
		`"a""b",5,"c""d`:   10,
		`1,2,"open` + "\n": 5,
		`a"b,"c`:           5, // a quote inside a bare field opens nothing
		`"a","b"`:          1, // none open: the first
		`no quote`:         0,
	} {
		assert.Equal(t, want, openQuote([]byte(line)), line)
	}
}
