package analysis

import (
	"context"
	"time"

	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/source"
)

// Metric is the histogram in Prometheus that records the calls of a
// source that is not Prometheus (files, Jaeger, ClickHouse): the rules
// the rules command writes query it, grouped by the same labels.
type Metric struct {
	Name string
	// Unit is what one of its units lasts; 0: from its name's suffix,
	// else seconds (Prometheus's base unit).
	Unit time.Duration
	// Bounds are the le bounds of a classic histogram, in its unit;
	// none: a native histogram, whose share above a timeout needs none.
	Bounds []float64
}

// RunRules is the analysis the rules command writes its rules from: of a
// Prometheus source as RunPrometheus makes it; of any other as RunSource
// does, then read as the report of m (its prometheus object, and for a
// classic histogram each group's bounds): the timeout comes from the
// source, the rules keep checking it on m. OTLP metrics files, which
// hold a histogram's buckets, keep its kind and bounds unless m has
// bounds of its own.
func RunRules(ctx context.Context, o Options, s source.Source, m Metric) (*report.Report, error) {
	if _, ok := s.(*source.Prometheus); ok {
		return RunSource(ctx, o, s, nil)
	}
	r, err := RunSource(ctx, o, s, nil)
	if err != nil {
		return nil, err
	}
	name := promsource.HistogramName(m.Name)
	if r.Prometheus != nil && len(m.Bounds) == 0 {
		// OTLP metrics files: the histogram exported to Prometheus is
		// the one read, its bounds the same: an explicit histogram is a
		// classic one there, an exponential one native; its name is
		// Prometheus's.
		r.Prometheus.Metric = name
		switch r.Prometheus.Kind {
		case promsource.OTLPExplicit:
			r.Prometheus.Kind = promsource.Classic
		case promsource.OTLPExponential:
			r.Prometheus.Kind = promsource.Native
		}
		return r, nil
	}
	unit := m.Unit
	if unit <= 0 {
		var ok bool
		if unit, ok = promsource.UnitOf(name); !ok {
			unit = time.Second
		}
	}
	kind := promsource.Native
	if len(m.Bounds) > 0 {
		kind = promsource.Classic
	}
	r.Prometheus = &report.PrometheusSource{Metric: name, Kind: kind, UnitSeconds: unit.Seconds(), Warnings: []string{}}
	for i := range r.Groups {
		g := &r.Groups[i]
		if kind == promsource.Classic {
			b := &report.Buckets{Kind: kind, BoundsSeconds: make([]float64, len(m.Bounds)), Repairs: []string{}, Steps: []report.StepQuantile{}}
			for j, le := range m.Bounds {
				b.BoundsSeconds[j] = le * unit.Seconds()
			}
			g.Buckets = b
		}
	}
	return r, nil
}
