package promsource

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

func TestSimilarRanking(t *testing.T) {
	names := model.LabelValues{
		"http_request_duration_seconds_bucket", "http_request_duration_seconds_count", "http_request_duration_seconds_sum",
		"http_request_size_bytes", "rpc_duration_seconds_bucket", "http_requests_total", "up", "http_request_duration_second",
		"grpc_server_handling_seconds_bucket",
	}
	assert.Equal(t, []string{"http_request_duration_seconds", "http_request_size_bytes", "rpc_duration_seconds", "http_requests_total"},
		Similar("http_request_duration_second", names, 4), "itself left out, each base once, most shared words first")
	assert.Empty(t, Similar("zzz", names, 5))
	assert.Empty(t, Similar("http_request_duration_seconds", names, 0))
}

// similarReference is Similar as it was before it streamed: every name
// held, ranked at the end.
func similarReference(want string, names model.LabelValues, n int) []string {
	ww := nameWords(want)
	seen := map[string]bool{}
	var cs []candidate
	for _, lv := range names {
		nm := string(lv)
		base := nm
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(nm, suffix); ok {
				base = b
				break
			}
		}
		if seen[base] || base == want {
			continue
		}
		seen[base] = true
		shared := 0
		for w := range nameWords(base) {
			if ww[w] {
				shared++
			}
		}
		d := levenshtein(want, base)
		if shared == 0 && d > len(want)/3 {
			continue
		}
		cs = append(cs, candidate{base, shared, d})
	}
	slices.SortFunc(cs, func(a, b candidate) int {
		if c := cmp.Compare(b.shared, a.shared); c != 0 {
			return c
		}
		if c := cmp.Compare(a.dist, b.dist); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// Keeping only the best n as names arrive ranks as holding them all did,
// duplicates and evictions included.
func TestSimilarStreamsAsBefore(t *testing.T) {
	words := []string{"http", "request", "duration", "seconds", "rpc", "bytes", "api", "x"}
	suffixes := []string{"", "_bucket", "_count", "_sum"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var names model.LabelValues
		for range rng.IntN(40) {
			var parts []string
			for range 1 + rng.IntN(4) {
				parts = append(parts, words[rng.IntN(len(words))])
			}
			names = append(names, model.LabelValue(strings.Join(parts, "_")+suffixes[rng.IntN(len(suffixes))]))
		}
		n := rng.IntN(6)
		want := "http_request_duration_seconds"
		assert.Equal(t, similarReference(want, names, n), Similar(want, names, n), "%v", names)
	}
}
