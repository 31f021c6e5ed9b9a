package promsource

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// decoded is what a visitor saw, for comparison with encoding/json's
// reading of the same answer through model's own UnmarshalJSON methods.
type decoded struct {
	ans    *answer
	vector model.Vector
	matrix model.Matrix
	values model.LabelValues
}

// decodeAll decodes an answer of type want, collecting every element;
// series chunks of one series are joined again.
func decodeAll(r io.Reader, want model.ValueType, keep labels) (*decoded, error) {
	d := &decoded{}
	v := &visitor{want: want, keep: keep,
		sample: func(s *model.Sample) error { d.vector = append(d.vector, s); return nil },
		series: func(ss *model.SampleStream) error {
			// The next chunk of a series comes with the same map.
			if n := len(d.matrix); n > 0 && ss.Metric != nil && sameMap(d.matrix[n-1].Metric, ss.Metric) && chunked(d.matrix[n-1]) {
				last := d.matrix[n-1]
				last.Values = append(last.Values, ss.Values...)
				last.Histograms = append(last.Histograms, ss.Histograms...)
				return nil
			}
			d.matrix = append(d.matrix, &model.SampleStream{Metric: ss.Metric,
				Values: append([]model.SamplePair(nil), ss.Values...), Histograms: append([]model.SampleHistogramPair(nil), ss.Histograms...)})
			return nil
		},
		value: func(l model.LabelValue) error { d.values = append(d.values, l); return nil },
	}
	ans, err := decodeAnswer(r, v)
	d.ans = ans
	return d, err
}

func sameMap(a, b model.Metric) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// chunked reports whether a series collected so far filled whole chunks:
// only then may the next call continue it.
func chunked(ss *model.SampleStream) bool {
	n := len(ss.Values) + len(ss.Histograms)
	return n > 0 && n%seriesChunk == 0
}

func TestDecodeAnswer(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    model.ValueType
		keep    labels
		check   func(t *testing.T, d *decoded)
		wantErr string
	}{
		{
			name: "vector, labels escaped, values special",
			body: `{"status":"success","data":{"resultType":"vector","result":[` +
				`{"metric":{"route":"/a\"b\u00e9","le":"+Inf"},"value":[1700000000.5,"NaN"]},` +
				`{"metric":{},"value":[1700000001,"-Inf"]}]},"warnings":["w"],"infos":["i"]}`,
			want: model.ValVector, keep: allLabels,
			check: func(t *testing.T, d *decoded) {
				require.Len(t, d.vector, 2)
				assert.Equal(t, model.LabelValue("/a\"bé"), d.vector[0].Metric["route"])
				assert.Equal(t, model.Time(1700000000500), d.vector[0].Timestamp)
				assert.True(t, math.IsNaN(float64(d.vector[0].Value)))
				assert.True(t, math.IsInf(float64(d.vector[1].Value), -1))
				assert.Equal(t, []string{"w"}, d.ans.warnings)
				assert.Equal(t, []string{"i"}, d.ans.infos)
			},
		},
		{
			name: "a key twice: the data",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]},"Data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`,
			want: model.ValVector, keep: allLabels,
			wantErr: `the key "data" comes twice in one object`,
		},
		{
			name: "a key twice: a series' values",
			body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]],"values":[[2,"1"]]}]}}`,
			want: model.ValMatrix, keep: allLabels,
			wantErr: `the key "values" comes twice in one object`,
		},
		{
			name: "a key twice: a sample's value",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"],"value":[1,"2"]}]}}`,
			want: model.ValVector, keep: allLabels,
			wantErr: `the key "value" comes twice in one object`,
		},
		{
			name: "labels not asked for are dropped",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"x","job":"api","le":"0.1","route":"/"},"value":[1,"2"]}]}}`,
			want: model.ValVector, keep: onlyLabels("le", "route"),
			check: func(t *testing.T, d *decoded) {
				assert.Equal(t, model.Metric{"le": "0.1", "route": "/"}, d.vector[0].Metric)
			},
		},
		{
			name: "keys in any case and order, unknown members skipped",
			body: `{"Data":{"result":[{"Value":[1,"3"],"extra":{"a":[1,2,{"b":null}]},"METRIC":{"a":"b"}}],"resultType":"vector"},"stats":{"x":1e5},"Status":"success"}`,
			want: model.ValVector, keep: allLabels,
			check: func(t *testing.T, d *decoded) {
				require.Len(t, d.vector, 1)
				assert.Equal(t, model.SampleValue(3), d.vector[0].Value)
				assert.Equal(t, model.Metric{"a": "b"}, d.vector[0].Metric)
				assert.Equal(t, "success", d.ans.status)
			},
		},
		{
			name: "native histogram sample",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[5,{"count":"10","sum":"2.5","buckets":[[0,"0.5","1","4"],[3,"-0.1","0.1","6"]]}]}]}}`,
			want: model.ValVector, keep: allLabels,
			check: func(t *testing.T, d *decoded) {
				h := d.vector[0].Histogram
				require.NotNil(t, h)
				assert.Equal(t, model.FloatString(10), h.Count)
				assert.Equal(t, model.HistogramBuckets{{Boundaries: 0, Lower: 0.5, Upper: 1, Count: 4}, {Boundaries: 3, Lower: -0.1, Upper: 0.1, Count: 6}}, h.Buckets)
				assert.Equal(t, model.Time(5000), d.vector[0].Timestamp)
			},
		},
		{
			name: "label values",
			body: `{"status":"success","data":["a_seconds_bucket","b"]}`,
			want: model.ValNone,
			check: func(t *testing.T, d *decoded) {
				assert.Equal(t, model.LabelValues{"a_seconds_bucket", "b"}, d.values)
			},
		},
		{
			name: "error envelope",
			body: `{"status":"error","errorType":"bad_data","error":"parse error","data":null}`,
			want: model.ValVector,
			check: func(t *testing.T, d *decoded) {
				assert.Equal(t, "bad_data", d.ans.errorType)
				assert.Equal(t, "parse error", d.ans.errorMsg)
				assert.False(t, d.ans.data)
			},
		},
		{
			name: "another type is skipped, the caller tells",
			body: `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`,
			want: model.ValVector,
			check: func(t *testing.T, d *decoded) {
				assert.Equal(t, model.ValScalar, d.ans.resultType)
				assert.Empty(t, d.vector)
			},
		},
		{
			name: "too many warnings are counted",
			body: `{"status":"success","data":{"resultType":"vector","result":[]},"warnings":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 3)+manyWarnings(maxMessages+5), ",") + `]}`,
			want: model.ValVector,
			check: func(t *testing.T, d *decoded) {
				require.Len(t, d.ans.warnings, maxMessages+1)
				assert.Equal(t, "(and 6 more warnings, not shown)", d.ans.warnings[maxMessages], "a kept once, 105 distinct: 100 kept")
			},
		},
		{name: "HTML", body: `<html>`, want: model.ValVector, wantErr: `byte 0: found '<', want '{'`},
		{name: "truncated", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{}`, want: model.ValVector, wantErr: "ends in the middle"},
		{name: "trailing garbage", body: `{"status":"success","data":{"resultType":"vector","result":[]}} x`, want: model.ValVector, wantErr: "byte 64: found 'x', want the end"},
		{name: "two objects", body: `{"status":"success","data":{"resultType":"vector","result":[]}}{}`, want: model.ValVector, wantErr: "want the end"},
		{name: "value not a string", body: `{"data":{"resultType":"vector","result":[{"value":[1,2]}]}}`, want: model.ValVector, wantErr: "want a sample value in a string"},
		{name: "bad value", body: `{"data":{"resultType":"vector","result":[{"value":[1,"abc"]}]}}`, want: model.ValVector, wantErr: `sample value "abc" is not a number`},
		{name: "bad timestamp", body: `{"data":{"resultType":"vector","result":[{"value":[1e3,"1"]}]}}`, want: model.ValVector, wantErr: "timestamp 1e3 is not Unix seconds"},
		{name: "no resultType", body: `{"data":{"result":[]}}`, want: model.ValVector, wantErr: "no resultType"},
		{name: "unknown resultType", body: `{"data":{"resultType":"table","result":[]}}`, want: model.ValVector, wantErr: `resultType "table" is none of`},
		{name: "bad number", body: `{"data":{"x":01}}`, want: model.ValVector, wantErr: `"01" is not a JSON number`},
		{name: "control character", body: "{\"status\":\"a\nb\"}", want: model.ValVector, wantErr: "control characters must be escaped"},
		{name: "bad escape", body: `{"status":"a\qb"}`, want: model.ValVector, wantErr: "want an escape"},
		{name: "deep nesting", body: `{"x":` + strings.Repeat("[", maxDepth+1), want: model.ValVector, wantErr: "nested more than 100 deep"},
		{name: "trailing comma", body: `{"data":{"resultType":"vector","result":[{"value":[1,"1"]},]}}`, want: model.ValVector, wantErr: "want '{'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decodeAll(strings.NewReader(tt.body), tt.want, tt.keep)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.True(t, errIsSyntax(err), "a *syntaxError: %T", err)
				return
			}
			require.NoError(t, err)
			tt.check(t, d)
		})
	}
}

func manyWarnings(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`"w` + strings.Repeat("x", i) + `",`)
	}
	return b.String()
}

// A long series is handed over in chunks, in order, with its labels.
func TestDecodeSeriesChunks(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"le":"1"},"values":[`)
	const points = 2*seriesChunk + 7
	for i := range points {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`[` + strconv.Itoa(i) + `,"` + strconv.Itoa(i*2) + `"]`)
	}
	b.WriteString(`]},{"metric":{"le":"2"},"values":[]}]}}`)
	var calls []int
	var got []model.SamplePair
	v := &visitor{want: model.ValMatrix, keep: allLabels, series: func(ss *model.SampleStream) error {
		calls = append(calls, len(ss.Values))
		if ss.Metric["le"] == "1" {
			got = append(got, ss.Values...)
		}
		return nil
	}}
	_, err := decodeAnswer(strings.NewReader(b.String()), v)
	require.NoError(t, err)
	assert.Equal(t, []int{seriesChunk, seriesChunk, 7, 0}, calls, "two full chunks, the rest, then the empty series once")
	require.Len(t, got, points)
	for i, p := range got {
		require.Equal(t, model.SamplePair{Timestamp: model.Time(i * 1000), Value: model.SampleValue(i * 2)}, p)
	}
}

// endless is an answer that never ends: head, then body over and over.
type endless struct {
	head, body string
	n          int64 // bytes produced
	buf        []byte
}

func (e *endless) Read(p []byte) (int, error) {
	for len(e.buf) < len(p) {
		if e.n == 0 && len(e.buf) == 0 {
			e.buf = append(e.buf, e.head...)
		}
		e.buf = append(e.buf, e.body...)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	e.n += int64(n)
	return n, nil
}

// Garbage fails within the first window of input, whatever follows; a
// never-ending string fails at maxString, a skipped one at the cap.
func TestDecodeEndlessGarbage(t *testing.T) {
	prefix := `{"status":"success","data":{"resultType":"vector","result":[`
	tests := []struct {
		name     string
		src      *endless
		maxRead  int64
		wantErr  string
		tooLarge bool
	}{
		{"binary", &endless{body: "\x00\xff garbage {[ "}, scanWindow, "byte 0: found byte 0x00", false},
		{"after a valid start", &endless{head: prefix, body: "xyz"}, scanWindow, "found 'x', want '{'", false},
		{"an endless label value", &endless{head: prefix + `{"metric":{"le":"`, body: "aaaaaaaa"}, maxString + 2*scanWindow, "a string longer than 1 MiB", false},
		{"an endless number", &endless{head: prefix + `{"value":[`, body: "11111111"}, scanWindow, "a number longer than 64", false},
		{"endless nesting", &endless{head: `{"x":`, body: "[[[["}, scanWindow, "nested more than", false},
		{"an endless skipped string", &endless{head: `{"x":"`, body: "aaaaaaaa"}, 8<<20 + 1, "larger than 8 MiB", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &cappedReader{r: tt.src, left: 8 << 20, limit: 8 << 20}
			_, err := decodeAll(r, model.ValVector, allLabels)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Equal(t, tt.tooLarge, errors.Is(err, ErrTooLarge))
			assert.LessOrEqual(t, tt.src.n, tt.maxRead, "read no further than needed")
		})
	}
}

// An endless answer of valid samples streams: the first sample reaches
// the visitor before a second window is read, and the cap ends it at
// exactly its size.
func TestDecodeEndlessValid(t *testing.T) {
	src := &endless{head: `{"status":"success","data":{"resultType":"vector","result":[`,
		body: `{"metric":{"__name__":"x_bucket","le":"0.1"},"value":[1700000000,"1"]},`}
	const limit = 4 << 20
	r := &cappedReader{r: src, left: limit, limit: limit}
	var readAtFirst int64 = -1
	samples := 0
	v := &visitor{want: model.ValVector, keep: onlyLabels(), sample: func(*model.Sample) error {
		if samples == 0 {
			readAtFirst = src.n
		}
		samples++
		return nil
	}}
	_, err := decodeAnswer(r, v)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.EqualError(t, err, "the answer is larger than 4 MiB (--max-response-bytes)")
	assert.LessOrEqual(t, readAtFirst, int64(scanWindow), "the first sample before the rest is read")
	assert.Equal(t, int64(limit+1), src.n, "the cap and one byte more are read, nothing else")
	per := len(src.body)
	assert.InDelta(t, limit/per, samples, 1, "every whole sample within the cap")
}

// A body of exactly the cap's size decodes; one byte more fails, wherever
// the byte is, even in trailing white space.
func TestCapBoundary(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`
	for _, b := range []string{body, body + "\n"} {
		n := int64(len(b))
		_, err := decodeAll(&cappedReader{r: strings.NewReader(b), left: n, limit: n}, model.ValVector, allLabels)
		require.NoError(t, err, "a body of exactly the cap")
		_, err = decodeAll(&cappedReader{r: strings.NewReader(b), left: n - 1, limit: n - 1}, model.ValVector, allLabels)
		require.ErrorIs(t, err, ErrTooLarge, "one byte over the cap")
		assert.Contains(t, err.Error(), human.Bytes(n-1))
	}
	// A reader that returns data with io.EOF and one that returns (0, nil)
	// first do not move the boundary.
	n := int64(len(body))
	_, err := decodeAll(&cappedReader{r: &dataEOF{b: []byte(body)}, left: n, limit: n}, model.ValVector, allLabels)
	require.NoError(t, err)
	_, err = decodeAll(&cappedReader{r: &dataEOF{b: []byte(body + " ")}, left: n, limit: n}, model.ValVector, allLabels)
	require.ErrorIs(t, err, ErrTooLarge)
}

type dataEOF struct {
	b     []byte
	stall bool
}

func (d *dataEOF) Read(p []byte) (int, error) {
	if !d.stall {
		d.stall = true
		return 0, nil
	}
	n := copy(p, d.b)
	d.b = d.b[n:]
	if len(d.b) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// reference decodes an answer with encoding/json and model's UnmarshalJSON
// methods, as client_golang does on Go 1.27; nil when it fails.
func reference(b []byte, want model.ValueType) *decoded {
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
		Infos     []string        `json:"infos"`
		Data      json.RawMessage `json:"data"`
	}
	if json.Unmarshal(b, &env) != nil {
		return nil
	}
	d := &decoded{ans: &answer{status: env.Status, errorType: env.ErrorType, errorMsg: env.Error}}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return d
	}
	var data struct {
		Type   model.ValueType `json:"resultType"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(env.Data, &data) != nil {
		return nil
	}
	d.ans.resultType = data.Type
	switch {
	case data.Type != want:
	case want == model.ValVector && json.Unmarshal(data.Result, &d.vector) != nil:
		return nil
	case want == model.ValMatrix && json.Unmarshal(data.Result, &d.matrix) != nil:
		return nil
	}
	return d
}

func fuzzSeeds() []string {
	return []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"le":"0.1","route":"/a"},"value":[1700000000.123,"12.5"]}]},"warnings":["w"]}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"le":"+Inf"},"values":[[1,"1"],[2,"NaN"]]},{"metric":{},"histograms":[[3,{"count":"2","sum":"1","buckets":[[0,"0","1","2"]]}]]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[5,{"count":"10","sum":"2.5","buckets":[[1,"-1","1","4"]]}]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"1:10: parse error"}`,
		`{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"\u00e9\n"},"value":[1,"-Inf"]}]},"infos":["i"]}`,
		`<html>`,
		``,
	}
}

// FuzzDecodeAnswer: the decoder never panics, never hands over more than
// the input holds, fails on every truncation of an answer it accepts, and
// agrees with encoding/json on the values of answers both accept.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, matrix bool) {
		want := model.ValVector
		if matrix {
			want = model.ValMatrix
		}
		d, err := decodeAll(bytes.NewReader(in), want, allLabels)
		if err != nil {
			if !errIsSyntax(err) {
				t.Fatalf("an error that is not a syntaxError from a byte reader: %v", err)
			}
			return
		}
		// Every sample takes at least {}, every point [0,"0"] or [0,{}].
		points, labelBytes := len(d.vector), 0
		for _, s := range d.vector {
			for k, v := range s.Metric {
				labelBytes += len(k) + len(v)
			}
		}
		for _, ss := range d.matrix {
			points += len(ss.Values) + len(ss.Histograms)
			for k, v := range ss.Metric {
				labelBytes += len(k) + len(v)
			}
		}
		if 2*len(d.vector)+6*(points-len(d.vector)) > len(in) || labelBytes > len(in) {
			t.Fatalf("%d samples, %d points, %d label bytes from %d bytes", len(d.vector), points, labelBytes, len(in))
		}
		end := len(bytes.TrimRight(in, " \t\r\n"))
		for _, cut := range []int{end - 1, end / 2, end / 3} {
			if cut < 0 {
				continue
			}
			if _, err := decodeAll(bytes.NewReader(in[:cut]), want, allLabels); err == nil {
				t.Fatalf("a truncation to %d of %d bytes decodes", cut, len(in))
			}
		}
		ref := reference(in, want)
		if ref == nil || d.ans.resultType != want || ref.ans.resultType != want {
			return
		}
		if !ref.vector.Equal(d.vector) {
			t.Fatalf("vector %v, encoding/json: %v", d.vector, ref.vector)
		}
		if !matrixEqual(ref.matrix, d.matrix) {
			t.Fatalf("matrix %v, encoding/json: %v", d.matrix, ref.matrix)
		}
	})
}

func matrixEqual(a, b model.Matrix) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Metric.Equal(y.Metric) || len(x.Values) != len(y.Values) || len(x.Histograms) != len(y.Histograms) {
			return false
		}
		for j := range x.Values {
			if !x.Values[j].Equal(&y.Values[j]) {
				return false
			}
		}
		for j := range x.Histograms {
			if !x.Histograms[j].Equal(&y.Histograms[j]) {
				return false
			}
		}
	}
	return true
}
