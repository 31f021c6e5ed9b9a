package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusRuleClassify(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		includeErrors bool
		wantExcluded  string
		wantCensored  bool
	}{
		{"unknown counts", 0, false, "", false},
		{"1xx counts", 101, false, "", false},
		{"200 counts", 200, false, "", false},
		{"304 counts", 304, false, "", false},
		{"400 counts", 400, false, "", false},
		{"404 counts", 404, false, "", false},
		{"429 counts", 429, false, "", false},
		{"500 excluded", 500, false, "status 5xx", false},
		{"502 excluded", 502, false, "status 5xx", false},
		{"503 excluded", 503, false, "status 5xx", false},
		{"408 censored", 408, false, "", true},
		{"499 client closed censored", 499, false, "", true},
		{"504 censored", 504, false, "", true},
		{"524 censored", 524, false, "", true},
		{"598 censored", 598, false, "", true},
		{"599 censored", 599, false, "", true},
		{"600 outside HTTP counts", 600, false, "", false},
		{"include errors: 500 counts", 500, true, "", false},
		{"include errors: 504 still censored", 504, true, "", true},
		{"include errors: 499 still censored", 499, true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Sample{Status: tt.status}
			rule := StatusRule{IncludeErrors: tt.includeErrors}
			got := rule.Classify(&s)
			assert.Equal(t, tt.wantExcluded, got)
			assert.Equal(t, tt.wantCensored, s.Censored)
		})
	}
}

func TestStatusRuleDecoderVerdictFirst(t *testing.T) {
	var rule StatusRule
	// A decoder censored a sample from other evidence (a proxy's
	// termination state): a 200 or a 503 must not undo that.
	for _, status := range []int{200, 503} {
		s := Sample{Status: status, Censored: true}
		assert.Empty(t, rule.Classify(&s))
		assert.True(t, s.Censored)
	}
	// A decoder excluded a fast failure (Envoy UF with status 0).
	s := Sample{Excluded: "envoy UF,URX"}
	assert.Equal(t, "envoy UF,URX", rule.Classify(&s))
}

func TestParseStatusRule(t *testing.T) {
	tests := []struct {
		spec string
		want map[int]StatusAction
	}{
		{"", map[int]StatusAction{200: Count, 404: Count, 500: Exclude, 504: Censor}},
		{"exclude=4xx", map[int]StatusAction{200: Count, 404: Exclude, 408: Exclude, 500: Exclude, 504: Censor}},
		{"exclude=4xx count=404", map[int]StatusAction{404: Count, 403: Exclude}},
		{"count=404 exclude=4xx", map[int]StatusAction{404: Count, 403: Exclude}}, // a code beats its class
		{"count=5xx; censor=503", map[int]StatusAction{500: Count, 503: Censor, 504: Count}},
		{"censor=429,503", map[int]StatusAction{429: Censor, 503: Censor, 500: Exclude}},
		{"COUNT=2XX", map[int]StatusAction{204: Count}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			r, err := ParseStatusRule(tt.spec)
			require.NoError(t, err)
			for code, want := range tt.want {
				assert.Equal(t, want, r.Action(code), "status %d", code)
			}
		})
	}
	for _, bad := range []string{"drop=5xx", "count", "count=", "count=abc", "count=42", "exclude=0xx"} {
		_, err := ParseStatusRule(bad)
		assert.Error(t, err, bad)
	}
	_, err := ParseStatusRule("drop=5xx")
	assert.EqualError(t, err, `status rule "drop=5xx": want action=codes with action count, exclude or censor (e.g. "exclude=4xx count=404")`)
}

func TestStatusRuleExcludedReason(t *testing.T) {
	r, err := ParseStatusRule("exclude=4xx,302")
	require.NoError(t, err)
	s := Sample{Status: 404}
	assert.Equal(t, "status 4xx", r.Classify(&s))
	s = Sample{Status: 302}
	assert.Equal(t, "status 3xx", r.Classify(&s))
}

func BenchmarkClassify(b *testing.B) {
	b.ReportAllocs()
	var r StatusRule
	statuses := []int{200, 404, 500, 504, 302}
	for i := 0; b.Loop(); i++ {
		s := Sample{Status: statuses[i%len(statuses)]}
		_ = r.Classify(&s)
	}
}
