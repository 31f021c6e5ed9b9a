// Package promtest answers Prometheus's HTTP API the way a server holding
// one classic histogram does, for the tests of promsource and of the
// commands that use it.
package promtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Labelled answers every instant query (GET or POST /api/v1/query, the
// query in the form value "query") about a classic histogram with one
// series per label set of sets, set i with 1000 x (i+1) calls: count(...)
// is the number of sets; a query of _bucket the buckets le 0.1, 0.5, 1 and
// +Inf at 60 %, 95 %, 99.95 % and all of the calls; a query of _sum 120 x
// (i+1) seconds; any other (_count, rates) the calls. The answer is the
// API's vector result, {"status":"success","data":{"resultType":"vector",
// "result":[...]}}, every sample at time 1800000000. A query of
// timestamp() has an empty answer, as from a server that cannot tell when
// the data begin and end: the rates are over the whole window.
//
// A range query (/api/v1/query_range) is answered as a matrix with a
// sample at each step from start to end, the k-th (from 0) the instant
// answer's value x (k+1), except that at every third step (k = 2, 5, ...)
// the calls of le 0.5 are 90 % instead of 95 %: a slower step.
func Labelled(sets []map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		var times []float64
		ranged := strings.HasSuffix(r.URL.Path, "/query_range")
		if ranged {
			start, err1 := strconv.ParseFloat(r.FormValue("start"), 64)
			end, err2 := strconv.ParseFloat(r.FormValue("end"), 64)
			step, err3 := strconv.ParseFloat(r.FormValue("step"), 64)
			if err := errors.Join(err1, err2, err3); err != nil || step <= 0 {
				http.Error(w, fmt.Sprintf(`{"status":"error","errorType":"bad_data","error":"start, end or step: %v"}`, err), http.StatusBadRequest)
				return
			}
			for t := start; t <= end; t += step {
				times = append(times, t)
			}
		}
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
			if !ranged {
				out = append(out, fmt.Sprintf(`{"metric":%s,"value":[1800000000,"%g"]}`, b, v))
				return
			}
			var vs []string
			for k, t := range times {
				x := v * float64(k+1)
				if le == "0.5" && k%3 == 2 {
					x = v / 0.95 * 0.9 * float64(k+1)
				}
				vs = append(vs, fmt.Sprintf(`[%s,"%g"]`, strconv.FormatFloat(t, 'f', -1, 64), x))
			}
			out = append(out, fmt.Sprintf(`{"metric":%s,"values":[%s]}`, b, strings.Join(vs, ",")))
		}
		switch {
		case strings.Contains(q, "timestamp("):
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
		kind := "vector"
		if ranged {
			kind = "matrix"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[%s]}}`, kind, strings.Join(out, ","))
	}
}
