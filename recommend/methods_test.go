package recommend_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestPolicyIdempotentFromMethods pins issue 29's item 18: where the data
// say each call's method, they decide idempotency (RFC 9110 section
// 9.2.2), without --by method and without --idempotent; a group that
// mixes idempotent and non-idempotent methods is not retried, and the
// policy says so.
func TestPolicyIdempotentFromMethods(t *testing.T) {
	h, rec := domain()
	never := recommend.NeverSent
	tests := []struct {
		name        string
		o           recommend.PolicyOptions
		idempotent  bool
		from        string
		methods     []string
		retryOn     []string
		code        finding.Code // a finding the policy must have; "" none of the three below
		wantMessage string
	}{
		{"GET only: idempotent from the data",
			recommend.PolicyOptions{Attempts: 3, Methods: map[string]int64{"GET": 1452}},
			true, recommend.IdempotentFromMethods, []string{"GET"}, recommend.DefaultRetryOn, "", ""},
		{"GET, HEAD, PUT and DELETE: all idempotent",
			recommend.PolicyOptions{Attempts: 3, Methods: map[string]int64{"GET": 10, "HEAD": 1, "PUT": 3, "DELETE": 2}},
			true, recommend.IdempotentFromMethods, []string{"DELETE", "GET", "HEAD", "PUT"}, recommend.DefaultRetryOn, "", ""},
		{"GET and POST mixed: not retried, and said",
			recommend.PolicyOptions{Attempts: 3, Methods: map[string]int64{"GET": 1200, "POST": 300}},
			false, recommend.IdempotentFromMethods, []string{"GET", "POST"}, never, finding.MethodsMixed,
			"the group's calls mix GET (1,200) and POST (300): POST is not idempotent, so none of them is retried beyond failures that prove the request was never sent (connect-failure, refused-stream); add method to --by (--by route,method) to retry the idempotent ones"},
		{"POST only",
			recommend.PolicyOptions{Attempts: 3, Methods: map[string]int64{"POST": 7}},
			false, recommend.IdempotentFromMethods, []string{"POST"}, never, finding.RetryNeverSentOnly,
			"its calls are POST (7), not idempotent, so only failures"},
		{"another method is never idempotent",
			recommend.PolicyOptions{Attempts: 3, Methods: map[string]int64{"GET": 5, "other": 1}},
			false, recommend.IdempotentFromMethods, []string{"GET", "other"}, never, finding.MethodsMixed,
			"mix GET (5) and other methods (1): other is not idempotent"},
		{"--idempotent does not override a POST in the data",
			recommend.PolicyOptions{Attempts: 3, Idempotent: true, Methods: map[string]int64{"GET": 9, "POST": 1}},
			false, recommend.IdempotentFromMethods, []string{"GET", "POST"}, never, finding.MethodNotIdempotent,
			"the group's calls include POST (1), not idempotent, so the group is not treated as idempotent despite --idempotent"},
		{"--idempotent-methods with POST (idempotency keys)",
			recommend.PolicyOptions{Attempts: 3, IdempotentMethods: []string{"GET", "POST"}, Methods: map[string]int64{"GET": 9, "POST": 1}},
			true, recommend.IdempotentFromMethods, []string{"GET", "POST"}, recommend.DefaultRetryOn, "", ""},
		{"the group's own method (--by method) comes first",
			recommend.PolicyOptions{Attempts: 3, Method: "POST", Methods: map[string]int64{"POST": 4}},
			false, recommend.IdempotentFromMethod, nil, never, finding.RetryNeverSentOnly, "POST is not idempotent"},
		{"no methods in the data: --idempotent decides",
			recommend.PolicyOptions{Attempts: 3, Idempotent: true},
			true, recommend.IdempotentFromFlag, nil, recommend.DefaultRetryOn, "", ""},
		{"nothing says idempotent",
			recommend.PolicyOptions{Attempts: 3},
			false, recommend.IdempotentFromNone, nil, never, finding.RetryNeverSentOnly, "not marked idempotent"},
		{"one attempt: a mix is not worth a warning",
			recommend.PolicyOptions{Methods: map[string]int64{"GET": 9, "POST": 1}},
			false, recommend.IdempotentFromMethods, []string{"GET", "POST"}, never, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := recommend.NewPolicy(h, rec, tt.o)
			require.NoError(t, err)
			assert.Equal(t, tt.idempotent, p.Idempotent)
			assert.Equal(t, tt.from, p.IdempotentFrom)
			assert.Equal(t, tt.methods, p.Methods)
			assert.Equal(t, tt.retryOn, p.RetryOn)
			var codes []finding.Code
			for _, f := range p.Findings {
				codes = append(codes, f.Code)
			}
			idemCodes := []finding.Code{finding.MethodsMixed, finding.RetryNeverSentOnly, finding.MethodNotIdempotent}
			if tt.code == "" {
				for _, c := range idemCodes {
					assert.NotContains(t, codes, c)
				}
				return
			}
			require.Contains(t, codes, tt.code)
			found := false
			for _, w := range p.Warnings {
				found = found || strings.Contains(w, tt.wantMessage)
			}
			assert.True(t, found, "no warning contains %q in %q", tt.wantMessage, p.Warnings)
		})
	}
}
