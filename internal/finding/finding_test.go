package finding

import (
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var codePattern = regexp.MustCompile(`TT-[A-Z0-9]+(?:-[A-Z0-9]+)*`)

// TestDocumented fails when docs/findings.md and codes.go disagree: a code
// declared and not documented, documented and not declared, or documented
// with another severity.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/findings.md")
	require.NoError(t, err)
	headings := map[Code]Severity{}
	var order []Code
	lines := strings.Split(string(doc), "\n")
	for i, line := range lines {
		c, ok := strings.CutPrefix(line, "### ")
		if !ok {
			continue
		}
		require.Regexp(t, "^"+codePattern.String()+"$", c, "docs/findings.md:%d: a heading that is not a code", i+1)
		require.Less(t, i+1, len(lines), "docs/findings.md:%d: %s has no severity line", i+1, c)
		sev, _, _ := strings.Cut(strings.TrimPrefix(lines[i+1], "Severity: "), ".")
		headings[Code(c)] = Severity(sev)
		order = append(order, Code(c))
	}
	for _, m := range codePattern.FindAllString(string(doc), -1) {
		_, ok := Lookup(Code(m))
		assert.True(t, ok, "docs/findings.md names %s, which codes.go does not declare", m)
	}
	var declared []Code
	for _, d := range Codes() {
		declared = append(declared, d.Code)
		sev, ok := headings[d.Code]
		if assert.True(t, ok, "%s is declared but has no heading in docs/findings.md", d.Code) {
			assert.Equal(t, d.Severity, sev, "%s: the severity in docs/findings.md", d.Code)
		}
		assert.Contains(t, []Severity{Info, Warning, Error}, d.Severity, d.Code)
		assert.NotEmpty(t, d.Summary, d.Code)
	}
	assert.Equal(t, declared, order, "docs/findings.md lists the codes in the order of codes.go")
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(declared))), len(declared), "a code is declared twice")
}

// TestCodesOnlyFromConstants fails when code outside this package writes a
// code as a string literal: every code emitted must be one of the
// constants TestDocumented checks.
func TestCodesOnlyFromConstants(t *testing.T) {
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if filepath.Base(filepath.Dir(path)) == "finding" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`"`+codePattern.String()).FindAllString(string(b), -1) {
			t.Errorf("%s: the code %s is written as a literal; use its constant in internal/finding/codes.go", path, m[1:])
		}
		return nil
	})
	require.NoError(t, err)
}

func TestNewCleansFields(t *testing.T) {
	f := Newf(FewAbove, Fields{"d": 1500 * time.Millisecond, "nan": math.NaN(), "inf": math.Inf(1), "n": 3, "s": []string{"a"}},
		"only %d", 3)
	assert.Equal(t, Warning, f.Severity, "the severity codes.go declares")
	assert.Equal(t, "only 3", f.Message)
	assert.Equal(t, Fields{"d": 1.5, "nan": nil, "inf": nil, "n": int64(3), "s": []string{"a"}}, f.Fields)
}

func TestJSON(t *testing.T) {
	f := New(FewAbove, Fields{"samples_above": int64(2), "high_seconds": nil, "quantile": 0.999}, "only 2 calls")
	b, err := json.Marshal(f)
	require.NoError(t, err)
	assert.JSONEq(t, `{"code":"TT-FEW-ABOVE","severity":"warning","message":"only 2 calls","high_seconds":null,"quantile":0.999,"samples_above":2}`, string(b))
	assert.True(t, strings.HasPrefix(string(b), `{"code":"TT-FEW-ABOVE","severity":"warning","message":"only 2 calls",`),
		"code, severity and message first: %s", b)

	var back Finding
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, Finding{Code: FewAbove, Severity: Warning, Message: "only 2 calls",
		Fields: Fields{"samples_above": 2.0, "high_seconds": nil, "quantile": 0.999}}, back)

	_, err = json.Marshal(New(FewAbove, Fields{"code": "x"}, "m"))
	assert.ErrorContains(t, err, `field "code" takes the name of a member`)
	assert.Error(t, json.Unmarshal([]byte(`{"code": 3}`), &back))
	assert.Error(t, json.Unmarshal([]byte(`null`), &back))
}

func TestFilters(t *testing.T) {
	fs := []Finding{New(FewAbove, nil, "a"), New(Censored, nil, "b"), New(OutOfRange, nil, "c")}
	assert.Equal(t, []string{"a", "b", "c"}, Messages(fs))
	assert.Nil(t, Messages(nil))
	assert.True(t, Has(fs, Censored))
	assert.False(t, Has(fs, LowerBound))
	assert.Equal(t, []string{"a", "c"}, Messages(Without(fs, Censored, LowerBound)))
	c := Clone(fs)
	c[0].Fields["x"] = 1
	assert.NotContains(t, fs[0].Fields, "x", "Clone shares no map")
}
