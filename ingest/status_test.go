package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
		{"400 excluded", 400, false, "status 4xx", false},
		{"404 excluded", 404, false, "status 4xx", false},
		{"429 excluded", 429, false, "status 4xx", false},
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
		{"include errors: 404 counts", 404, true, "", false},
		{"include errors: 500 counts", 500, true, "", false},
		{"include errors: 504 still censored", 504, true, "", true},
		{"include errors: 499 still censored", 499, true, "", true},
		{"include errors: 200 counts", 200, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Sample{Status: tt.status}
			got := StatusRule{IncludeErrors: tt.includeErrors}.Classify(&s)
			assert.Equal(t, tt.wantExcluded, got)
			assert.Equal(t, tt.wantCensored, s.Censored)
		})
	}
}

func TestStatusRuleKeepsCensored(t *testing.T) {
	// A decoder may have censored a sample from other evidence (a proxy's
	// termination state); a 200 must not undo that.
	s := Sample{Status: 200, Censored: true}
	assert.Empty(t, StatusRule{}.Classify(&s))
	assert.True(t, s.Censored)
}
