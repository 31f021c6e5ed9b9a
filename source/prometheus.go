package source

import (
	"context"

	"github.com/tunetimeout/tunetimeout/promsource"
)

// Prometheus is a histogram in a live Prometheus (or a server that speaks
// its HTTP API: VictoriaMetrics, Thanos, Mimir), read over its window.
type Prometheus struct {
	Options promsource.Options
	// Overall builds the recommendation on the whole window even with
	// Options.Step; by default it builds on the worst step.
	Overall bool
}

// Name is the metric and the server, without credentials.
func (p *Prometheus) Name() string {
	return promsource.HistogramName(p.Options.Metric) + " at " + p.Options.Connection.Display()
}

// Gives is Buckets.
func (p *Prometheus) Gives() Gives { return Buckets }

// Fetch reads the histogram's buckets, group by group (promsource.Fetch).
func (p *Prometheus) Fetch(ctx context.Context) (*promsource.Result, error) {
	return promsource.Fetch(ctx, p.Options)
}
