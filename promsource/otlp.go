package promsource

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// OTLP histograms, read from files (ingest.ReadOTLPMetrics), become the
// same bucketed form as Prometheus's: explicit buckets are classic ones
// (an OTLP bucket (bounds[i-1], bounds[i]] is le=bounds[i]), exponential
// ones native ones (the same bases: an OTLP index i is Prometheus's i+1).
// A series' points add up by their temporality: a cumulative series'
// latest point holds all the others (a later start is a restart: the
// segments add up), a delta series' points are added.

// Kinds of OTLP histogram (Result.Kind).
const (
	OTLPExplicit    = "explicit"
	OTLPExponential = "exponential"
)

// MaxOTLPSeries bounds the series an OTLPSet keeps; the points of more are
// refused with an error that says to choose a metric or fewer groups.
const MaxOTLPSeries = 100_000

// OTLPSet gathers the histogram points of OTLP metrics, bounded by
// MaxOTLPSeries.
type OTLPSet struct {
	metrics map[string]*otlpMetric
	series  int
	files   []string
}

type otlpMetric struct {
	name        string
	unit        time.Duration
	unitFrom    string
	exponential bool
	series      map[string]*otlpSeries
	points      int64
}

// otlpSeries is one series: for cumulative points, the latest point of
// each start (segment); for delta points, their sum.
type otlpSeries struct {
	group      string
	excluded   string // why its calls are left out; "" to keep them
	censored   bool   // its calls ended by a timeout or a cancel
	cumulative bool
	segments   map[int64]*otlpPoint // by start, cumulative
	sum        *otlpPoint           // delta
}

// otlpPoint is a point's counts in seconds-free form (the metric's unit).
type otlpPoint struct {
	start, end    time.Time
	count         uint64
	sum, min, max float64
	bounds        []float64 // explicit
	counts        []uint64  // explicit: per bucket; exponential: from offset
	scale         int32
	offset        int32
	zero          uint64
	zeroThreshold float64
	negative      uint64
	layoutChanged bool // delta points of one series with other bounds
}

// NewOTLPSet returns an empty set.
func NewOTLPSet() *OTLPSet { return &OTLPSet{metrics: map[string]*otlpMetric{}} }

// Len is the number of points added.
func (s *OTLPSet) Len() int64 {
	var n int64
	for _, m := range s.metrics {
		n += m.points
	}
	return n
}

// Add adds a point, copied; excluded is why the status rule leaves its
// calls out ("" to keep them), censored that they ended by a timeout or a
// cancel (their latency is a lower bound).
func (s *OTLPSet) Add(p *ingest.MetricPoint, excluded string, censored bool) error {
	m := s.metrics[p.Metric]
	if m == nil {
		m = &otlpMetric{name: p.Metric, unit: p.Unit, unitFrom: p.UnitFrom, exponential: p.Exponential, series: map[string]*otlpSeries{}}
		s.metrics[p.Metric] = m
	}
	if !slices.Contains(s.files, p.File) {
		s.files = append(s.files, p.File)
	}
	switch {
	case p.Unit != m.unit:
		return fmt.Errorf("%s:%d: metric %s is in %s here and in %s before: one metric has one unit", p.File, p.Record, p.Metric, human.Seconds(p.Unit.Seconds()), human.Seconds(m.unit.Seconds()))
	case p.Exponential != m.exponential:
		return fmt.Errorf("%s:%d: metric %s is an %s histogram here and an %s one before: one metric has one kind", p.File, p.Record, p.Metric, kindOf(p.Exponential), kindOf(m.exponential))
	}
	se := m.series[p.Series]
	if se == nil {
		if s.series >= MaxOTLPSeries {
			return fmt.Errorf("%s:%d: more than %d histogram series: choose one metric (%s) or group by fewer keys", p.File, p.Record, MaxOTLPSeries, usage.Metric)
		}
		s.series++
		se = &otlpSeries{group: p.Group, excluded: excluded, censored: censored, cumulative: p.Cumulative, segments: map[int64]*otlpPoint{}}
		m.series[p.Series] = se
	}
	m.points++
	pt := copyPoint(p)
	if se.cumulative != p.Cumulative {
		return fmt.Errorf("%s:%d: a series of metric %s is cumulative in some points and delta in others", p.File, p.Record, p.Metric)
	}
	if p.Cumulative {
		k := p.Start.UnixNano()
		if p.Start.IsZero() {
			k = 0
		}
		if old := se.segments[k]; old == nil || !p.Time.Before(old.end) {
			se.segments[k] = pt
		}
		return nil
	}
	if se.sum == nil {
		se.sum = pt
		return nil
	}
	se.sum.add(pt)
	return nil
}

func kindOf(exponential bool) string {
	if exponential {
		return OTLPExponential
	}
	return OTLPExplicit
}

func copyPoint(p *ingest.MetricPoint) *otlpPoint {
	return &otlpPoint{start: p.Start, end: p.Time, count: p.Count, sum: p.Sum, min: p.Min, max: p.Max,
		bounds: slices.Clone(p.Bounds), counts: slices.Clone(p.Counts),
		scale: p.Scale, offset: p.Offset, zero: p.ZeroCount, zeroThreshold: p.ZeroThreshold, negative: p.Negative}
}

// add adds o's counts to p's: the two must have the same layout (explicit
// bounds), or are brought to the coarser scale (exponential).
func (p *otlpPoint) add(o *otlpPoint) {
	if o.start.Before(p.start) || p.start.IsZero() {
		p.start = o.start
	}
	if o.end.After(p.end) {
		p.end = o.end
	}
	p.count += o.count
	p.sum = addKnown(p.sum, o.sum)
	p.min = extreme(p.min, o.min, math.Min)
	p.max = extreme(p.max, o.max, math.Max)
	p.negative += o.negative
	p.layoutChanged = p.layoutChanged || o.layoutChanged
	if o.bounds != nil || p.bounds != nil {
		if !slices.Equal(p.bounds, o.bounds) {
			p.layoutChanged = true
			return
		}
		for i := range p.counts {
			p.counts[i] += o.counts[i]
		}
		return
	}
	p.mergeExponential(o)
}

func addKnown(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a + b
}

// extreme is f(a, b) of the two that are known; NaN when neither is.
func extreme(a, b float64, f func(float64, float64) float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return f(a, b)
}

// mergeExponential adds o's exponential buckets to p's at the smaller of
// their scales: going down one scale, bucket i becomes i>>1 (two buckets
// become one, whose bounds are theirs: exact). The zero buckets add up
// under the wider threshold.
func (p *otlpPoint) mergeExponential(o *otlpPoint) {
	scale := min(p.scale, o.scale)
	pc, po := downscale(p.counts, p.offset, p.scale-scale)
	oc, oo := downscale(o.counts, o.offset, o.scale-scale)
	lo, hi := min(po, oo), max(po+int32(len(pc)), oo+int32(len(oc)))
	if len(pc) == 0 {
		lo, hi = oo, oo+int32(len(oc))
	} else if len(oc) == 0 {
		lo, hi = po, po+int32(len(pc))
	}
	out := make([]uint64, hi-lo)
	for i, c := range pc {
		out[int32(i)+po-lo] += c
	}
	for i, c := range oc {
		out[int32(i)+oo-lo] += c
	}
	p.counts, p.offset, p.scale = out, lo, scale
	p.zero += o.zero
	p.zeroThreshold = max(p.zeroThreshold, o.zeroThreshold)
}

// downscale returns counts from offset at a scale by bits coarser.
func downscale(counts []uint64, offset int32, by int32) ([]uint64, int32) {
	if by == 0 || len(counts) == 0 {
		return counts, offset
	}
	first := offset >> by
	last := (offset + int32(len(counts)) - 1) >> by
	out := make([]uint64, last-first+1)
	for i, c := range counts {
		out[((offset+int32(i))>>by)-first] += c
	}
	return out, first
}

// Metrics returns the names of the metrics added, by points, most first.
func (s *OTLPSet) Metrics() []string {
	names := slices.Collect(maps.Keys(s.metrics))
	sort.Slice(names, func(i, j int) bool {
		a, b := s.metrics[names[i]], s.metrics[names[j]]
		if a.points != b.points {
			return a.points > b.points
		}
		return a.name < b.name
	})
	return names
}

// Result returns what the set holds of metric ("" = the only one) as a
// Result: one Group per group name, with the calls the status rule leaves
// out counted apart (Group.Excluded), the window from the earliest start
// to the latest point, and the rates over it.
func (s *OTLPSet) Result(metric string) (*Result, error) {
	names := s.Metrics()
	if metric == "" {
		switch len(names) {
		case 0:
			return nil, fmt.Errorf("no histogram of latency")
		case 1:
			metric = names[0]
		default:
			return nil, fmt.Errorf("the input holds %d histograms of latency (%s): choose one with %s", len(names), strings.Join(quoted(names, 5), ", "), usage.Metric)
		}
	}
	m := s.metrics[metric]
	if m == nil {
		return nil, fmt.Errorf("no histogram %q; the input holds %s", metric, strings.Join(quoted(names, 5), ", "))
	}
	res := &Result{URL: strings.Join(s.files, ", "), Metric: m.name, Kind: kindOf(m.exponential), Unit: m.unit, UnitFrom: m.unitFrom}
	groups, first, last := m.groups()
	res.At = last
	if !first.IsZero() {
		res.Window = last.Sub(first)
	}
	var censored uint64
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		a := groups[name]
		censored += a.censored
		res.Groups = append(res.Groups, a.group(name, res, m.exponential))
	}
	if censored > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s calls ended by a timeout or a cancel (504, 499, DEADLINE_EXCEEDED, CANCELLED): their buckets hold how long they ran, a lower bound of how long they would have taken", human.Count(int64(censored))))
	}
	if res.Window == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("the points have no start time, so the window and the rates are unknown: give %s", usage.Rate))
	}
	return res, nil
}

// otlpGroup is what the series of one group add up to: their points
// (p), the calls the status rule leaves out by reason, the censored
// calls, and how many series.
type otlpGroup struct {
	p        *otlpPoint
	excluded map[string]int64
	censored uint64
	series   int
}

// groups adds up the points of m's series by group, in the order of the
// series' keys; first and last are the earliest start and the latest end
// of the points.
func (m *otlpMetric) groups() (groups map[string]*otlpGroup, first, last time.Time) {
	groups = map[string]*otlpGroup{}
	for _, key := range slices.Sorted(maps.Keys(m.series)) {
		se := m.series[key]
		pts := []*otlpPoint{se.sum}
		if se.cumulative {
			pts = pts[:0]
			for _, k := range slices.Sorted(maps.Keys(se.segments)) {
				pts = append(pts, se.segments[k])
			}
		}
		a := groups[se.group]
		if a == nil {
			a = &otlpGroup{excluded: map[string]int64{}}
			groups[se.group] = a
		}
		a.series++
		for _, pt := range pts {
			if pt == nil {
				continue
			}
			if first.IsZero() || (!pt.start.IsZero() && pt.start.Before(first)) {
				first = pt.start
			}
			if pt.end.After(last) {
				last = pt.end
			}
			if se.excluded != "" {
				a.excluded[se.excluded] += int64(pt.count)
				continue
			}
			if se.censored {
				a.censored += pt.count
			}
			if a.p == nil {
				c := *pt
				c.counts = slices.Clone(pt.counts)
				a.p = &c
				continue
			}
			a.p.add(pt)
		}
	}
	return groups, first, last
}

// group is the Group name of res (its unit and window) that a holds:
// its histogram, calls, rate and mean, or why there is none.
func (a *otlpGroup) group(name string, res *Result, exponential bool) Group {
	g := Group{Name: name, Excluded: a.excluded, Mean: math.NaN(), ServerEstimate: math.NaN()}
	switch {
	case a.p == nil:
		g.Err = fmt.Errorf("%w: the status rule leaves out every call", ErrEmptyWindow)
	case a.p.layoutChanged:
		g.Err = fmt.Errorf("its %d series do not all have the same explicit bounds, so their buckets cannot be added up: group by more keys (%s), or read one series at a time", a.series, usage.By)
	default:
		g.Overall, g.Err = a.p.histogram(res.Unit, exponential)
		if g.Overall != nil {
			g.Calls = g.Overall.Count
			if res.Window > 0 {
				g.Rate = g.Calls / res.Window.Seconds()
			}
			if !math.IsNaN(a.p.sum) && a.p.count > 0 {
				g.Mean = a.p.sum / float64(a.p.count) * res.Unit.Seconds()
			}
		}
	}
	return g
}

func quoted(names []string, n int) []string {
	out := make([]string, 0, min(len(names), n+1))
	for i, nm := range names {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(names)-n))
			break
		}
		out = append(out, fmt.Sprintf("%q", nm))
	}
	return out
}

// histogram is the point as a histogram.Bucketed in seconds. The point's max, when
// it has one, bounds its highest bucket: no call took longer, so a
// quantile there has an upper bound even in the bucket above the largest
// explicit bound.
func (p *otlpPoint) histogram(unit time.Duration, exponential bool) (*histogram.Bucketed, error) {
	var h *histogram.Bucketed
	var err error
	if exponential {
		h, err = p.exponentialHistogram(unit)
	} else {
		les := make([]LE, 0, len(p.counts))
		cum := 0.0
		for i, c := range p.counts {
			cum += float64(c)
			upper := math.Inf(1)
			if i < len(p.bounds) {
				upper = p.bounds[i]
			}
			les = append(les, LE{Upper: upper, Cumulative: cum})
		}
		h, err = FromClassic(les, unit)
		if h != nil {
			h.Kind = OTLPExplicit
		}
	}
	if err != nil {
		return h, err
	}
	if mx := p.max * unit.Seconds(); mx >= 0 && !math.IsNaN(mx) {
		for i := len(h.Buckets) - 1; i >= 0; i-- {
			b := &h.Buckets[i]
			if b.Count == 0 {
				continue
			}
			if mx < b.Hi && mx >= b.Lo {
				if math.IsInf(b.Hi, 1) {
					d := "histogram_quantile does not know the points' max, which bounds the bucket above the largest bound here"
					if h.Divergence != "" {
						d = h.Divergence + "; " + d
					}
					h.Divergence = d
				}
				b.Hi = mx
				// Buckets above, all empty, must not end below it.
				h.Buckets = h.Buckets[:i+1]
			}
			break
		}
	}
	return h, nil
}

// exponentialHistogram reads exponential buckets as FromNative reads a
// native histogram: bucket index i is (base^i, base^(i+1)], the zero
// bucket [0, threshold], negative buckets left out and counted.
func (p *otlpPoint) exponentialHistogram(unit time.Duration) (*histogram.Bucketed, error) {
	h := &histogram.Bucketed{Kind: OTLPExponential}
	u := unit.Seconds()
	if p.zero > 0 {
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: 0, Hi: p.zeroThreshold * u, Count: float64(p.zero)})
	}
	for i, c := range p.counts {
		if c == 0 {
			continue
		}
		idx := int64(p.offset) + int64(i)
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: ingest.ExponentialBound(p.scale, idx) * u, Hi: ingest.ExponentialBound(p.scale, idx+1) * u, Count: float64(c)})
	}
	// The zero bucket first; a threshold above the lowest buckets' bounds
	// (points merged under the wider one) keeps them in order by Hi.
	slices.SortStableFunc(h.Buckets, func(a, b histogram.Bucket) int {
		switch {
		case a.Hi < b.Hi:
			return -1
		case a.Hi > b.Hi:
			return 1
		}
		return 0
	})
	cum := 0.0
	for i := range h.Buckets {
		cum += h.Buckets[i].Count
		h.Buckets[i].Cumulative = cum
	}
	h.Count = cum
	h.Negative = float64(p.negative)
	if p.negative > 0 {
		repair(h, "negative-buckets", finding.Fields{"calls": h.Negative}, "%s calls lie in negative buckets: a latency below zero is a bug of the exporter; they are left out", human.Count(int64(p.negative)))
	}
	noteBeyond(h, unit)
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: the histogram holds no call", ErrEmptyWindow)
	}
	return h, nil
}
