// Package promtest answers Prometheus's HTTP API the way a server holding
// one classic histogram does, for the tests of promsource and of the
// commands that use it.
package promtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Labelled answers every instant query (GET or POST /api/v1/query, the
// query in the form value "query") about a classic histogram with one
// series per label set of sets, set i with 1000 x (i+1) calls: count(...)
// is the number of sets; a query of _bucket the buckets le 0.1, 0.5, 1 and
// +Inf at 60 %, 95 %, 99.95 % and all of the calls; a query of _sum 120 x
// (i+1) seconds; any other (_count, rates) the calls. The answer is the
// API's vector result, {"status":"success","data":{"resultType":"vector",
// "result":[...]}}, every sample at time 1800000000.
func Labelled(sets []map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		var out []string
		series := func(m map[string]string, le string, v float64) {
			labels := map[string]string{}
			for k, val := range m {
				labels[k] = val
			}
			if le != "" {
				labels["le"] = le
			}
			b, _ := json.Marshal(labels)
			out = append(out, fmt.Sprintf(`{"metric":%s,"value":[1800000000,"%g"]}`, b, v))
		}
		switch {
		case strings.HasPrefix(q, "count("):
			series(nil, "", float64(len(sets)))
		case strings.Contains(q, "_bucket"):
			for i, m := range sets {
				n := float64(1000 * (i + 1))
				series(m, "0.1", 0.6*n)
				series(m, "0.5", 0.95*n)
				series(m, "1", 0.9995*n)
				series(m, "+Inf", n)
			}
		case strings.Contains(q, "_sum"):
			for i, m := range sets {
				series(m, "", 120*float64(i+1))
			}
		default: // _count, rates
			for i, m := range sets {
				series(m, "", float64(1000*(i+1)))
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(out, ","))
	}
}
