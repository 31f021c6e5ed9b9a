package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEstimateLabels: the estimate is called Prometheus's histogram_quantile
// only when it is Prometheus's answer; a server that was asked is named with
// its own answer; a repaired histogram's estimate is tunetimeout's, with why.
func TestEstimateLabels(t *testing.T) {
	tests := []struct {
		name      string
		b         Buckets
		want, not []string
	}{
		{"Prometheus's", Buckets{EstimateSeconds: Finite(0.918), EstimateBy: "histogram_quantile", HistogramQuantileSeconds: Finite(0.918)},
			[]string{"Prometheus's histogram_quantile (a linear estimate within the bucket): 918ms."}, []string{"tunetimeout's"}},
		{"repaired", Buckets{EstimateSeconds: Finite(0.046), EstimateBy: "tunetimeout", EstimateNote: "histogram_quantile reads the negative buckets, which tunetimeout left out"},
			[]string{"tunetimeout's interpolation over the buckets it kept: 46ms (histogram_quantile reads the negative buckets, which tunetimeout left out)."},
			[]string{"Prometheus's histogram_quantile"}},
		{"VictoriaMetrics differs", Buckets{EstimateSeconds: Finite(8.5), EstimateBy: "tunetimeout", EstimateNote: "VictoriaMetrics's histogram_quantile computes otherwise",
			HistogramQuantileSeconds: Finite(10), Server: "VictoriaMetrics"},
			[]string{"tunetimeout's interpolation over the buckets it kept: 8.5s (VictoriaMetrics's histogram_quantile computes otherwise).", "VictoriaMetrics's histogram_quantile answers 10s."},
			[]string{"Prometheus's"}},
		{"VictoriaMetrics agrees", Buckets{EstimateSeconds: Finite(1.01), EstimateBy: "histogram_quantile", HistogramQuantileSeconds: Finite(1.01), Server: "VictoriaMetrics"},
			[]string{"VictoriaMetrics's histogram_quantile (asked from the server; a linear estimate within the bucket): 1.01s"}, []string{"Prometheus's"}},
		{"no estimate", Buckets{EstimateSeconds: Finite(math.NaN()), EstimateBy: "tunetimeout"},
			nil, []string{"estimate", "NaN", "histogram_quantile"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			b.Kind, b.Quantile, b.Bucket = "classic", 0.999, NewBucketRange(0.5, 10)
			out := sectionText(t, bucketsSection(Group{Buckets: &b}))
			for _, w := range tt.want {
				assert.Contains(t, out, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, out, n)
			}
			j, err := json.Marshal(&b)
			require.NoError(t, err, "no NaN reaches the encoder")
			assert.False(t, strings.Contains(string(j), "NaN"))
		})
	}
}

// sectionText is a section as the text report writes it.
func sectionText(t *testing.T, s *Section) string {
	t.Helper()
	require.NotNil(t, s)
	var b strings.Builder
	require.NoError(t, writeDocumentText(&b, &Document{Sections: []Section{*s}}))
	return strings.Join(strings.Fields(b.String()), " ") // unwrapped
}
