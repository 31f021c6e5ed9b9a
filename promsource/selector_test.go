package promsource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // Matchers of the result
		err  string
	}{
		{in: "", want: ""},
		{in: "{}", want: ""},
		{in: ` { job = "api" , code!~"5..", } `, want: `job="api", code!~"5.."`},
		{in: `{path='/a\'b"', x=~` + "`a|b\\d`" + `}`, want: `path="/a'b\"", x=~"a|b\\d"`},
		{in: `{v="tab\there\u00e9\x41"}`, want: `v="tab\thereéA"`},
		{in: `{_a1="x"}`, want: `_a1="x"`},
		{in: `job="api"`, err: `must be label matchers in braces`},
		{in: `{"http.route"="x"}`, err: `expected a label name at "\"http.route\"=\"x\""`},
		{in: `{1a="x"}`, err: `expected a label name`},
		{in: `{job="api"} or vector(1) or {a="b"}`, err: `expected , or } after the matcher of job at "} or vector(1) or {a=\"b\""`},
		{in: `{job="a" job="b"}`, err: `expected , or } after the matcher of job`},
		{in: `{job}`, err: `expected =, !=, =~ or !~ after job`},
		{in: `{job="a}`, err: `the value of job: the quote does not close`},
		{in: `{job=api}`, err: `the value of job: expected a quoted string at "api"`},
		{in: `{job="\q"}`, err: `the value of job: a bad escape`},
		{in: "{job=\"a\nb\"}", err: `a line break in a quoted string`},
		{in: `{code=~"5(("}`, err: `the value of code is not a regular expression`},
		{in: `{,}`, err: `expected a label name at ","`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ms, err := ParseSelector(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, Matchers(ms))
		})
	}
}
