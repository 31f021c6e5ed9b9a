package promsource

import (
	"fmt"
	"io"
	"strconv"

	"github.com/prometheus/common/model"
)

// answer is what an answer of the Prometheus HTTP API holds besides its
// data, which a decoder hands to a visitor element by element
// (https://prometheus.io/docs/prometheus/latest/querying/api/#format-overview).
type answer struct {
	status     string // "success" or "error"
	errorType  string
	errorMsg   string
	warnings   []string
	infos      []string
	resultType model.ValueType // ValNone for label values
	data       bool            // the answer held data (not null)
}

// visitor receives the elements of an answer's data as they are decoded,
// so that no more than one element is held at a time.
type visitor struct {
	want model.ValueType // ValVector, ValMatrix; ValNone: label values
	keep labels
	// sample receives each sample of a vector. It owns the sample.
	sample func(*model.Sample) error
	// series receives each series of a matrix, in chunks of at most
	// seriesChunk points: a long series arrives in several calls with the
	// same Metric, its points in order. Values and Histograms are reused
	// after the call returns; the Metric and the histograms are not.
	series func(*model.SampleStream) error
	// value receives each label value.
	value func(model.LabelValue) error
}

// labels selects the labels kept while decoding; the others are dropped as
// they are read, so that labels cost memory only when they are used.
type labels struct {
	all   bool
	names []string
}

var allLabels = labels{all: true}

func onlyLabels(names ...string) labels { return labels{names: names} }

func (l labels) has(name []byte) bool {
	if l.all {
		return true
	}
	for _, n := range l.names {
		if string(name) == n {
			return true
		}
	}
	return false
}

// Bounds of the decoder.
const (
	seriesChunk = 4096 // points of a series handed over at a time
	maxMessages = 100  // warnings and infos kept per answer
)

// consumerError is an error a visitor returned: it stopped the decoding
// and is the caller's own, passed on unchanged.
type consumerError struct{ err error }

func (e *consumerError) Error() string { return e.err.Error() }
func (e *consumerError) Unwrap() error { return e.err }

// decodeAnswer decodes an answer from r as a stream, handing the data's
// elements to v; with v nil it skips the data. Errors are *syntaxError for
// an answer that is not the API's JSON, *consumerError from v, or what
// reading r failed with (a *tooLargeError past the cap).
func decodeAnswer(r io.Reader, v *visitor) (*answer, error) {
	d := &decoder{s: newScanner(r), v: v}
	err := d.decode()
	return &d.ans, err
}

type decoder struct {
	s   *scanner
	v   *visitor
	ans answer
	ss  model.SampleStream // the chunk being filled
}

// The members of the objects of an answer that are read, in the lower case
// scanner.key gives; the others are skipped.
var (
	answerKeys = []string{"status", "errortype", "error", "warnings", "infos", "data"}
	dataKeys   = []string{"resulttype", "result"}
	sampleKeys = []string{"metric", "value", "histogram"}
	seriesKeys = []string{"metric", "values", "histograms"}
)

// object reads an object (what names it in errors), handing each member
// whose key is one of keys to member and skipping the others. A key of
// keys that comes twice is an error: encoding/json would keep the last
// value, and reading both would count a series or a sample twice.
func (d *decoder) object(what string, keys []string, member func(key string) error) error {
	s := d.s
	if err := s.expect('{', what); err != nil {
		return err
	}
	var seen uint8 // the keys read; len(keys) <= 8
	for n := 0; ; n++ {
		more, err := s.member('}', n)
		if err != nil || !more {
			return err
		}
		k, err := s.key()
		if err != nil {
			return err
		}
		i := 0
		for i < len(keys) && keys[i] != string(k) {
			i++
		}
		switch {
		case i == len(keys):
			err = s.skip()
		case seen&(1<<i) != 0:
			return s.fail("the key %q comes twice in one object", keys[i])
		default:
			seen |= 1 << i
			err = member(keys[i])
		}
		if err != nil {
			return err
		}
	}
}

func (d *decoder) decode() error {
	err := d.object("'{' (the Prometheus API answers with a JSON object)", answerKeys, func(key string) (err error) {
		switch key {
		case "status":
			d.ans.status, err = d.optString()
		case "errortype":
			d.ans.errorType, err = d.optString()
		case "error":
			d.ans.errorMsg, err = d.optString()
		case "warnings":
			d.ans.warnings, err = d.messages("warnings")
		case "infos":
			d.ans.infos, err = d.messages("infos")
		case "data":
			err = d.data()
		}
		return err
	})
	if err != nil {
		return err
	}
	return d.s.finish()
}

// optString reads a string or null.
func (d *decoder) optString() (string, error) {
	if null, err := d.s.null(); null || err != nil {
		return "", err
	}
	return d.s.str()
}

// messages reads warnings or infos: the first maxMessages distinct ones,
// and how many more there were.
func (d *decoder) messages(kind string) ([]string, error) {
	s := d.s
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	if err := s.expect('[', "'[' (a list of "+kind+")"); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	extra := 0
	for n := 0; ; n++ {
		more, err := s.member(']', n)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		m, err := d.optString()
		if err != nil {
			return nil, err
		}
		switch {
		case seen[m]:
		case len(out) < maxMessages:
			seen[m] = true
			out = append(out, m)
		default:
			extra++
		}
	}
	if extra > 0 {
		out = append(out, fmt.Sprintf("(and %d more %s, not shown)", extra, kind))
	}
	return out, nil
}

func (d *decoder) data() error {
	s := d.s
	if null, err := s.null(); null || err != nil {
		return err
	}
	d.ans.data = true
	if d.v == nil { // an error's answer: its data do not matter
		return s.skip()
	}
	if d.v.want == model.ValNone {
		return d.labelValues()
	}
	result := false
	err := d.object("'{' (the data of a query)", dataKeys, func(key string) error {
		if key == "result" {
			result = true
			return d.result()
		}
		t, err := s.str()
		if err != nil {
			return err
		}
		if err := d.ans.resultType.UnmarshalJSON(strconv.AppendQuote(nil, t)); err != nil {
			return s.fail("resultType %q is none of scalar, vector, matrix, string", t)
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case d.ans.resultType == model.ValNone:
		return s.fail("the data have no resultType")
	case !result:
		return s.fail("the data have no result")
	}
	return nil
}

// result reads the result array. An answer of another type than wanted is
// skipped (the caller tells so); one whose resultType comes after it is
// read as the wanted type.
func (d *decoder) result() error {
	s := d.s
	if t := d.ans.resultType; t != model.ValNone && t != d.v.want {
		return s.skip()
	}
	if null, err := s.null(); null || err != nil {
		return err
	}
	if err := s.expect('[', "'[' (the result of a query)"); err != nil {
		return err
	}
	for n := 0; ; n++ {
		more, err := s.member(']', n)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if d.v.want == model.ValMatrix {
			err = d.series()
		} else {
			err = d.sample()
		}
		if err != nil {
			return err
		}
	}
}

func (d *decoder) sample() error {
	smp := &model.Sample{}
	var hist model.SampleHistogramPair
	err := d.object("'{' (a sample)", sampleKeys, func(key string) (err error) {
		switch key {
		case "metric":
			smp.Metric, err = d.metric()
		case "value":
			smp.Timestamp, smp.Value, err = d.pair()
		case "histogram":
			hist, err = d.histogramPair()
		}
		return err
	})
	if err != nil {
		return err
	}
	if hist.Histogram != nil { // as model.Sample's UnmarshalJSON: the histogram wins
		smp.Timestamp, smp.Value, smp.Histogram = hist.Timestamp, 0, hist.Histogram
	}
	if err := d.v.sample(smp); err != nil {
		return &consumerError{err}
	}
	return nil
}

func (d *decoder) series() error {
	s := d.s
	ss := &d.ss
	ss.Metric, ss.Values, ss.Histograms = nil, ss.Values[:0], ss.Histograms[:0]
	metric, delivered := false, false
	flush := func() error {
		delivered = true
		err := d.v.series(ss)
		ss.Values, ss.Histograms = ss.Values[:0], ss.Histograms[:0]
		if err != nil {
			return &consumerError{err}
		}
		return nil
	}
	err := d.object("'{' (a series)", seriesKeys, func(key string) error {
		if key == "metric" {
			metric = true
			var err error
			ss.Metric, err = d.metric()
			return err
		}
		values := key == "values"
		if null, err := s.null(); null || err != nil {
			return err
		}
		if err := s.expect('[', "'[' (the points of a series)"); err != nil {
			return err
		}
		for i := 0; ; i++ {
			more, err := s.member(']', i)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			if values {
				t, v, err := d.pair()
				if err != nil {
					return err
				}
				ss.Values = append(ss.Values, model.SamplePair{Timestamp: t, Value: v})
			} else {
				h, err := d.histogramPair()
				if err != nil {
					return err
				}
				if h.Histogram == nil {
					return s.fail("a histogram point is null")
				}
				ss.Histograms = append(ss.Histograms, h)
			}
			// Hand over full chunks once the series' labels are known.
			if metric && len(ss.Values)+len(ss.Histograms) >= seriesChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !delivered || len(ss.Values)+len(ss.Histograms) > 0 {
		return flush()
	}
	return nil
}

// metric reads a series' labels, keeping those the visitor asked for.
func (d *decoder) metric() (model.Metric, error) {
	s := d.s
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	if err := s.expect('{', "'{' (the labels of a series)"); err != nil {
		return nil, err
	}
	var m model.Metric
	for n := 0; ; n++ {
		more, err := s.member('}', n)
		if err != nil {
			return nil, err
		}
		if !more {
			return m, nil
		}
		name, err := s.name()
		if err != nil {
			return nil, err
		}
		if !d.v.keep.has(name) {
			if null, err := s.null(); err != nil {
				return nil, err
			} else if !null {
				if _, _, err := s.stringBytes(false); err != nil {
					return nil, err
				}
			}
			continue
		}
		ln := model.LabelName(name)
		lv, err := d.optString()
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = model.Metric{}
		}
		m[ln] = model.LabelValue(lv)
	}
}

// pair reads [timestamp, "value"].
func (d *decoder) pair() (model.Time, model.SampleValue, error) {
	s := d.s
	if null, err := s.null(); null || err != nil {
		return 0, 0, err
	}
	if err := s.expect('[', "'[' (a [timestamp, value] pair)"); err != nil {
		return 0, 0, err
	}
	t, err := d.timestamp()
	if err != nil {
		return 0, 0, err
	}
	if err := s.expect(',', "',' after a timestamp"); err != nil {
		return 0, 0, err
	}
	v, err := d.float("sample value")
	if err != nil {
		return 0, 0, err
	}
	return t, model.SampleValue(v), s.expect(']', "']' (a pair has two members)")
}

func (d *decoder) timestamp() (model.Time, error) {
	b, err := d.s.number()
	if err != nil {
		return 0, err
	}
	var t model.Time
	if err := t.UnmarshalJSON(b); err != nil {
		return 0, d.s.fail("timestamp %s is not Unix seconds", b)
	}
	return t, nil
}

// float reads a number written as a string, as Prometheus writes values.
func (d *decoder) float(what string) (float64, error) {
	s := d.s
	if c, ok := s.peek(); ok && c != '"' {
		return 0, s.unexpected(c, "a "+what+" in a string")
	}
	b, escaped, err := s.stringBytes(true)
	if err != nil {
		return 0, err
	}
	if !escaped {
		if f, err := strconv.ParseFloat(string(b), 64); err == nil {
			return f, nil
		}
		return 0, s.fail("%s %q is not a number", what, b)
	}
	str, err := s.decodeString(b)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return 0, s.fail("%s %q is not a number", what, str)
	}
	return f, nil
}

// histogramPair reads [timestamp, {"count": .., "sum": .., "buckets": [..]}].
func (d *decoder) histogramPair() (model.SampleHistogramPair, error) {
	s := d.s
	var p model.SampleHistogramPair
	if null, err := s.null(); null || err != nil {
		return p, err
	}
	if err := s.expect('[', "'[' (a [timestamp, histogram] pair)"); err != nil {
		return p, err
	}
	var err error
	if p.Timestamp, err = d.timestamp(); err != nil {
		return p, err
	}
	if err := s.expect(',', "',' after a timestamp"); err != nil {
		return p, err
	}
	if null, err := s.null(); err != nil {
		return p, err
	} else if null {
		return p, s.fail("a histogram is null")
	}
	if err := s.expect('{', "'{' (a native histogram)"); err != nil {
		return p, err
	}
	h := &model.SampleHistogram{}
	for n := 0; ; n++ {
		more, err := s.member('}', n)
		if err != nil {
			return p, err
		}
		if !more {
			break
		}
		k, err := s.key()
		if err != nil {
			return p, err
		}
		var f float64
		switch string(k) {
		case "count":
			f, err = d.float("histogram count")
			h.Count = model.FloatString(f)
		case "sum":
			f, err = d.float("histogram sum")
			h.Sum = model.FloatString(f)
		case "buckets":
			h.Buckets, err = d.buckets()
		default:
			err = s.skip()
		}
		if err != nil {
			return p, err
		}
	}
	p.Histogram = h
	return p, s.expect(']', "']' (a pair has two members)")
}

// buckets reads [[boundaries, "lower", "upper", "count"], ...].
func (d *decoder) buckets() (model.HistogramBuckets, error) {
	s := d.s
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	if err := s.expect('[', "'[' (the buckets of a histogram)"); err != nil {
		return nil, err
	}
	var out model.HistogramBuckets
	for n := 0; ; n++ {
		more, err := s.member(']', n)
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		if null, err := s.null(); err != nil {
			return nil, err
		} else if null {
			out = append(out, nil)
			continue
		}
		if err := s.expect('[', "'[' (a bucket)"); err != nil {
			return nil, err
		}
		b := &model.HistogramBucket{}
		num, err := s.number()
		if err != nil {
			return nil, err
		}
		bounds, err := strconv.ParseInt(string(num), 10, 32)
		if err != nil {
			return nil, s.fail("bucket boundaries %s is not an integer", num)
		}
		b.Boundaries = int32(bounds)
		for _, f := range []*model.FloatString{&b.Lower, &b.Upper, &b.Count} {
			if err := s.expect(',', "',' (a bucket has four members)"); err != nil {
				return nil, err
			}
			v, err := d.float("bucket bound or count")
			if err != nil {
				return nil, err
			}
			*f = model.FloatString(v)
		}
		if err := s.expect(']', "']' (a bucket has four members)"); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

func (d *decoder) labelValues() error {
	s := d.s
	if err := s.expect('[', "'[' (a list of label values)"); err != nil {
		return err
	}
	for n := 0; ; n++ {
		more, err := s.member(']', n)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		v, err := d.optString()
		if err != nil {
			return err
		}
		if err := d.v.value(model.LabelValue(v)); err != nil {
			return &consumerError{err}
		}
	}
}
