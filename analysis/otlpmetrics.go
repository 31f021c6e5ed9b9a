package analysis

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/report"
)

// OTLP metrics files hold histograms, not calls: they are read into a
// promsource.OTLPSet and analysed as Prometheus's buckets are (bucket
// honesty written once, in promsource and prometheusGroup).

// otlpMetrics is what the OTLP metrics inputs gave.
type otlpMetrics struct {
	set   *promsource.OTLPSet
	stats ingest.OTLPMetricsStats
}

// readOTLPMetrics reads one input of OTLP metrics into m, counting its
// points as records and its bad points as bad records. Points outside
// --from/--to are left out (a cumulative point covers its series from
// its start: --from then keeps the series whose latest point is after it).
func readOTLPMetrics(ctx context.Context, name string, r io.Reader, o Options, m *otlpMetrics, in *report.Input) error {
	return ingest.ReadOTLPMetrics(r, name, o.Ingest, &m.stats, func(p *ingest.MetricPoint) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		in.Records++
		if !o.inRange(p.Time) {
			in.OutsideRange++
			return nil
		}
		s := ingest.Sample{Status: p.Status, Excluded: p.Excluded, Censored: p.Censored}
		reason := o.Status.Classify(&s)
		return m.set.Add(p, reason, s.Censored)
	}, func(err error) error {
		return badRecord(err, &o, in)
	})
}

// runOTLPMetrics builds the report of the OTLP histograms read.
func runOTLPMetrics(ctx context.Context, o Options, m *otlpMetrics, in report.Input) (*report.Report, error) {
	r := &report.Report{Input: in, Groups: []report.Group{}}
	st := &m.stats
	if n := sum(st.NotHistograms); n > 0 {
		r.Input.Note(finding.Newf(finding.PrometheusNote, finding.Fields{"metrics": maps.Clone(st.NotHistograms)},
			"%s metrics are not histograms (%s); they were passed over.", human.Count(n), describe(st.NotHistograms)))
	}
	if len(st.Summaries) > 0 {
		r.Input.Note(finding.Newf(finding.PrometheusNote, finding.Fields{"summaries": st.Summaries},
			"Summaries (%s) were passed over: their quantiles were computed by each process over its own window; they cannot be added up, and cannot tell what share of calls a timeout would cut off.",
			strings.Join(st.Summaries, ", ")))
	}
	if n := sum(st.NotTimes); n > 0 {
		r.Input.Note(finding.Newf(finding.PrometheusNote, finding.Fields{"points": maps.Clone(st.NotTimes)},
			"%s points of histograms whose unit is no time (%s) were passed over; give %s for a histogram without a unit.", human.Count(n), describe(st.NotTimes), usage.Unit))
	}
	if n := sum(st.OtherMetric); n > 0 {
		r.Input.Note(finding.Newf(finding.PrometheusNote, finding.Fields{"points": maps.Clone(st.OtherMetric)},
			"%s points of other histograms than %s %s were passed over (%s).", human.Count(n), usage.Metric, o.Ingest.Metric, describe(st.OtherMetric)))
	}
	if st.NoValue > 0 {
		r.Input.Note(finding.Newf(finding.PrometheusNote, finding.Fields{"points": st.NoValue},
			"%s points are flagged NO_RECORDED_VALUE (their series was stale); they hold no call.", human.Count(st.NoValue)))
	}
	res, err := m.set.Result(o.Ingest.Metric)
	if err != nil {
		if m.set.Len() == 0 && len(st.OtherMetric) > 0 {
			names := slices.Sorted(maps.Keys(st.OtherMetric))
			return nil, fmt.Errorf("%s: no histogram %q; the input holds %s", strings.Join(in.Files, ", "), o.Ingest.Metric, strings.Join(names, ", "))
		}
		if m.set.Len() == 0 && in.BadRecords == 0 {
			var held []string
			if n := sum(st.NotHistograms); n > 0 {
				held = append(held, human.Count(n)+" metrics that are not histograms ("+describe(st.NotHistograms)+")")
			}
			if n := sum(st.NotTimes); n > 0 {
				held = append(held, fmt.Sprintf("%s points of histograms whose unit is no time (%s; %s gives one without a unit its unit)", human.Count(n), describe(st.NotTimes), usage.Unit))
			}
			if st.NoValue > 0 {
				held = append(held, human.Count(st.NoValue)+" points flagged NO_RECORDED_VALUE")
			}
			if len(held) == 0 {
				held = append(held, "no metric")
			}
			return nil, fmt.Errorf("%s: nothing to analyse: no histogram of latency; the input holds %s", strings.Join(in.Files, ", "), strings.Join(held, ", "))
		}
		if m.set.Len() == 0 {
			return nil, nothingToAnalyse(r.Input, nil, o)
		}
		return nil, fmt.Errorf("%s: %w", strings.Join(in.Files, ", "), err)
	}
	r.Prometheus = &report.PrometheusSource{
		URL:           res.URL,
		Metric:        res.Metric,
		Kind:          res.Kind,
		UnitSeconds:   res.Unit.Seconds(),
		UnitFrom:      res.UnitFrom,
		At:            res.At.UTC().Format(time.RFC3339),
		WindowSeconds: res.Window.Seconds(),
		Aggregate:     "overall",
		Queries:       []string{},
		Server:        report.OTLPServer,
		Warnings:      []string{},
	}
	for _, n := range res.Notes {
		r.Input.Note(finding.New(finding.PrometheusNote, nil, n))
	}
	if err := bucketedGroups(ctx, o, PrometheusOptions{}, res, r, false); err != nil {
		return nil, err
	}
	if len(r.Groups) == 0 {
		return nil, fmt.Errorf("%s: no group of %s holds a call (%s)", strings.Join(in.Files, ", "), res.Metric, strings.Join(groupErrors(res), "; "))
	}
	if len(o.Ingest.By) == 0 {
		r.CallGraph = report.NewCallGraph(r.Groups)
	}
	return r, nil
}

func groupErrors(res *promsource.Result) []string {
	var out []string
	for _, g := range res.Groups {
		if g.Err != nil && len(out) < 3 {
			out = append(out, fmt.Sprintf("%q: %v", g.Name, g.Err))
		}
	}
	return out
}

// otlpCheckGroups are check's groups of the OTLP histograms read: their
// buckets, as a Prometheus histogram's are checked.
func otlpCheckGroups(ctx context.Context, o CheckOptions, m *otlpMetrics, in report.Input) (map[string]checkedGroup, report.Input, error) {
	res, err := m.set.Result(o.Ingest.Metric)
	if err != nil {
		if m.set.Len() == 0 {
			return nil, in, fmt.Errorf("%s: no histogram of latency to check against", strings.Join(in.Files, ", "))
		}
		return nil, in, fmt.Errorf("%s: %w", strings.Join(in.Files, ", "), err)
	}
	for _, n := range res.Notes {
		in.Note(finding.New(finding.PrometheusNote, nil, n))
	}
	// The points are the records; the groups' calls are not counted again.
	records := in.Records
	groups, in, err := bucketCheckGroups(ctx, o, res, in)
	in.Records = records
	return groups, in, err
}
