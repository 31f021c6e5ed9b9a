package watch

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
)

// The metrics, by name: a contract with dashboards (docs/watch.md). Every
// value is read from the last good report at each scrape. Their help
// names options by key ({confidence}), written as the CLI writes them
// when the Watcher is made (newMetricDescs).
type metricDescs struct {
	recommended, quantile, quantileLower, quantileUpper, cutOff, inFlight, poolExhausted,
	lastRunTimestamp, lastRunSuccess, lastRunDuration *prometheus.Desc
}

func newMetricDescs() *metricDescs {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, usage.Expand(help), labels, nil)
	}
	return &metricDescs{
		recommended: desc("tunetimeout_recommended_timeout_seconds",
			"The recommended timeout of the group in the last good report.", "group"),
		quantile: desc("tunetimeout_quantile_seconds",
			"The measured latency at the quantile (the report's percentiles; quantile=\"1\" is the maximum). For bucketed data (Prometheus) the upper bound of the quantile's bucket.", "group", "quantile"),
		quantileLower: desc("tunetimeout_quantile_lower_seconds",
			"Lower end of the confidence interval ({confidence}) of the quantile the timeout builds on.", "group", "quantile"),
		quantileUpper: desc("tunetimeout_quantile_upper_seconds",
			"Upper end of the confidence interval ({confidence}) of the quantile the timeout builds on; absent when it lies beyond the largest measured latency.", "group", "quantile"),
		cutOff: desc("tunetimeout_cut_off_ratio",
			"Share of the group's calls that take longer than the timeout (timeout=\"recommended\", or a {timeout} in seconds), at most: the calls of the histogram bucket holding the timeout count as cut off, so it is never below the truth.", "group", "timeout"),
		inFlight: desc("tunetimeout_in_flight_during_hang",
			"Calls in flight at once while the dependency hangs (Little's law: rate x what each call waits); absent without a rate.", "group"),
		poolExhausted: desc("tunetimeout_pool_exhausted",
			"1 when a hang of the dependency exhausts the {pool}, else 0; absent without {pool} or without a rate.", "group"),
		lastRunTimestamp: desc("tunetimeout_last_run_timestamp_seconds",
			"When the last run ended, successful or not, in Unix seconds; absent before the first run ends."),
		lastRunSuccess: desc("tunetimeout_last_run_success",
			"1 when the last run succeeded, 0 when it failed (the metrics are then those of the last good run)."),
		lastRunDuration: desc("tunetimeout_last_run_duration_seconds",
			"How long the last run took, successful or not."),
	}
}

// RecommendedLabel is the timeout label of tunetimeout_cut_off_ratio at
// the recommended timeout.
const RecommendedLabel = "recommended"

// collector is the Watcher's metrics: a prometheus.Collector that reads
// the last good report at each scrape, so that groups gone from it are
// gone from /metrics and nothing accumulates from one run to the next.
type collector struct {
	w *Watcher
	d *metricDescs
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, d := range []*prometheus.Desc{d.recommended, d.quantile, d.quantileLower, d.quantileUpper,
		d.cutOff, d.inFlight, d.poolExhausted, d.lastRunTimestamp, d.lastRunSuccess, d.lastRunDuration} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r, last := c.w.snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		// A NaN or infinite value says nothing a dashboard can draw.
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if last.done {
		gauge(c.d.lastRunTimestamp, float64(last.end.UnixNano())/1e9)
		gauge(c.d.lastRunSuccess, bool01(last.ok))
		gauge(c.d.lastRunDuration, last.duration.Seconds())
	}
	if r == nil {
		return
	}
	seen := make(map[string]bool, len(r.Groups))
	for i := range r.Groups {
		g := &r.Groups[i]
		name := labelValue(g.Name)
		if seen[name] {
			// Two groups whose names read alike once made visible:
			// one series each, the first, rather than a failed scrape.
			continue
		}
		seen[name] = true
		rec := g.Recommendation
		gauge(c.d.recommended, rec.TimeoutSeconds, name)
		for _, p := range g.Percentiles {
			gauge(c.d.quantile, p.Seconds, name, quantileLabel(p.Quantile))
		}
		if rec.Interval.Confidence > 0 {
			q := quantileLabel(rec.Quantile)
			gauge(c.d.quantileLower, rec.Interval.LowSeconds, name, q)
			if rec.Interval.HighSeconds != nil {
				gauge(c.d.quantileUpper, *rec.Interval.HighSeconds, name, q)
			}
		}
		gauge(c.d.cutOff, rec.CutOffFraction, name, RecommendedLabel)
		for _, t := range c.w.o.Timeouts {
			if cand, ok := candidateAt(g.Candidates, t.Seconds()); ok {
				gauge(c.d.cutOff, cand.CutOffFraction, name, TimeoutLabel(t.Seconds()))
			}
		}
		ll := g.LittlesLaw
		if ll.InFlightDuringHang != nil {
			gauge(c.d.inFlight, *ll.InFlightDuringHang, name)
		}
		if ll.PoolExhausted != nil {
			gauge(c.d.poolExhausted, bool01(*ll.PoolExhausted), name)
		}
	}
}

// candidateAt returns the candidate at the timeout of seconds.
func candidateAt(cs []report.Candidate, seconds float64) (report.Candidate, bool) {
	for _, c := range cs {
		if math.Abs(c.TimeoutSeconds-seconds) <= 1e-9*seconds {
			return c, true
		}
	}
	return report.Candidate{}, false
}

// TimeoutLabel is the timeout label of a configured timeout: its seconds,
// as Prometheus writes an le bound ("0.25", "2").
func TimeoutLabel(seconds float64) string { return strconv.FormatFloat(seconds, 'g', -1, 64) }

// quantileLabel writes a quantile as Prometheus's summaries do: "0.999".
func quantileLabel(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

// labelValue is a group name as a label value: client_golang escapes
// quotes, backslashes and line breaks itself but refuses invalid UTF-8,
// which names read from bytes may hold, and passes every other control
// character raw (the exposition format allows any UTF-8), so an ESC or a
// BEL from an upstream label would reach a terminal that curls /metrics:
// they are written as visible escapes (escape.Visible), invalid bytes
// among them.
func labelValue(s string) string { return escape.Visible(s) }

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
