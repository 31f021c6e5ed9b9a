package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestStepProfileFetched: `prometheus --window 7d --step 1h` against a
// fake Prometheus holding stepWeek's buckets: the steps come back from the
// range query, the profile names 18:00 and the recommendation is its.
func TestStepProfileFetched(t *testing.T) {
	week := stepWeek(t, everyDay)
	les := []string{"0.1", "0.25", "0.5", "1", "2", "+Inf"}
	at := week.Steps[len(week.Steps)-1].End
	byEnd := map[int64]*histogram.Bucketed{}
	for _, st := range week.Steps {
		byEnd[st.End.Unix()] = st.Hist
	}
	var total float64
	overall := make([]float64, len(les))
	for _, st := range week.Steps {
		for i, b := range st.Hist.Buckets {
			overall[i] += b.Cumulative
		}
		total += st.Hist.Count
	}
	vector := func(samples ...string) string {
		return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			start, _ := strconv.ParseFloat(r.FormValue("start"), 64)
			end, _ := strconv.ParseFloat(r.FormValue("end"), 64)
			var series []string
			if strings.Contains(q, "_bucket") && !strings.HasPrefix(q, "histogram_quantile") {
				for i, le := range les {
					var vals []string
					for ts := int64(start); ts <= int64(end); ts += 3600 {
						if h := byEnd[ts]; h != nil {
							vals = append(vals, fmt.Sprintf(`[%d,"%g"]`, ts, h.Buckets[i].Cumulative))
						}
					}
					series = append(series, fmt.Sprintf(`{"metric":{"le":"%s"},"values":[%s]}`, le, strings.Join(vals, ",")))
				}
			} else if !strings.HasPrefix(q, "histogram_quantile") {
				var vals []string
				for ts := int64(start); ts <= int64(end); ts += 3600 {
					if h := byEnd[ts]; h != nil {
						vals = append(vals, fmt.Sprintf(`[%d,"%g"]`, ts, h.Count))
					}
				}
				series = append(series, fmt.Sprintf(`{"metric":{},"values":[%s]}`, strings.Join(vals, ",")))
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[%s]}}`, strings.Join(series, ","))
			return
		}
		switch {
		case strings.HasPrefix(q, "count("):
			fmt.Fprint(w, vector(fmt.Sprintf(`{"metric":{},"value":[%d,"1"]}`, at.Unix())))
		case strings.HasPrefix(q, "sum by (le)"):
			var s []string
			for i, le := range les {
				s = append(s, fmt.Sprintf(`{"metric":{"le":"%s"},"value":[%d,"%g"]}`, le, at.Unix(), overall[i]))
			}
			fmt.Fprint(w, vector(s...))
		case strings.HasPrefix(q, "histogram_quantile("):
			fmt.Fprint(w, vector())
		case strings.HasPrefix(q, "max(timestamp("):
			fmt.Fprint(w, vector(fmt.Sprintf(`{"metric":{},"value":[%d,"%d"]}`, at.Unix(), at.Unix()-5)))
		case strings.HasPrefix(q, "min(min_over_time(timestamp("):
			fmt.Fprint(w, vector(fmt.Sprintf(`{"metric":{},"value":[%d,"%d"]}`, at.Unix(), at.Unix()-7*24*3600+10)))
		case strings.Contains(q, "_sum"):
			fmt.Fprint(w, vector(fmt.Sprintf(`{"metric":{},"value":[%d,"%g"]}`, at.Unix(), 0.2*total)))
		case strings.HasPrefix(q, "max_over_time("):
			fmt.Fprint(w, vector(fmt.Sprintf(`{"metric":{},"value":[%d,"%g"]}`, at.Unix(), 3000.0/3600)))
		default:
			fmt.Fprint(w, vector(fmt.Sprintf(`{"metric":{},"value":[%d,"%g"]}`, at.Unix(), total)))
		}
	}))
	defer srv.Close()
	var p PrometheusOptions
	p.Source.URL = srv.URL
	p.Source.QueryTimeout = 5 * time.Second
	p.Source.Metric = "x_seconds"
	p.Source.Window = 7 * 24 * time.Hour
	p.Source.Step = time.Hour
	p.Source.At = at
	r, err := RunPrometheus(context.Background(), Options{Recommend: recommend.DefaultOptions()}, p)
	require.NoError(t, err)
	require.Len(t, r.Groups, 1)
	g := r.Groups[0]
	require.Len(t, g.Windows, 7*24)
	require.NotNil(t, g.Profile)
	require.NotNil(t, g.Profile.WorstSlot, g.Profile.Reason)
	assert.Equal(t, "18:00-19:00", g.Profile.WorstSlot.Slot)
	assert.True(t, g.Profile.WorstSlot.Used)
	assert.Equal(t, "18:00-19:00", g.Buckets.UsesWorstSlot)
	assert.EqualValues(t, 21000, g.Samples)
	assert.Equal(t, 2.0, g.Recommendation.TimeoutSeconds)
}
