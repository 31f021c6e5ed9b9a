package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/deploy/internal/testbin"
)

// hook is one hook of .pre-commit-hooks.yaml, with the keys pre-commit's
// manifest schema has (pre_commit/clientlib.py, MANIFEST_HOOK_DICT); a
// key outside them fails decoding, as a typo would silently do nothing.
type hook struct {
	ID                      string   `yaml:"id"`
	Name                    string   `yaml:"name"`
	Entry                   string   `yaml:"entry"`
	Language                string   `yaml:"language"`
	Alias                   string   `yaml:"alias"`
	Files                   string   `yaml:"files"`
	Exclude                 string   `yaml:"exclude"`
	Types                   []string `yaml:"types"`
	TypesOr                 []string `yaml:"types_or"`
	ExcludeTypes            []string `yaml:"exclude_types"`
	AdditionalDependencies  []string `yaml:"additional_dependencies"`
	Args                    []string `yaml:"args"`
	AlwaysRun               bool     `yaml:"always_run"`
	FailFast                bool     `yaml:"fail_fast"`
	PassFilenames           *bool    `yaml:"pass_filenames"`
	Description             string   `yaml:"description"`
	LanguageVersion         string   `yaml:"language_version"`
	LogFile                 string   `yaml:"log_file"`
	MinimumPreCommitVersion string   `yaml:"minimum_pre_commit_version"`
	RequireSerial           bool     `yaml:"require_serial"`
	Stages                  []string `yaml:"stages"`
	Verbose                 bool     `yaml:"verbose"`
}

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) { testbin.Main(m) }

// tunetimeout builds the repository's binary once for the tests.
func tunetimeout(t *testing.T) string { return testbin.Tool(t, root) }

// TestPreCommitHooks: the manifest decodes strictly; each hook runs
// tunetimeout check on the staged files with the user's args, as
// pre-commit runs it (entry, args, file names), and fails the commit on
// an error finding; a misspelled key fails decoding.
func TestPreCommitHooks(t *testing.T) {
	body := readFile(t, filepath.Join(root, ".pre-commit-hooks.yaml"))
	var hooks []hook
	require.NoError(t, decodeStrict(t, body, &hooks))
	require.Len(t, hooks, 2)
	ids := map[string]string{}
	for _, h := range hooks {
		ids[h.ID] = h.Language
		assert.Equal(t, "tunetimeout check", h.Entry, h.ID)
		require.NotNil(t, h.PassFilenames, h.ID)
		assert.True(t, *h.PassFilenames, "%s: the staged configs are check's arguments", h.ID)
		assert.True(t, h.RequireSerial, "%s: one run reads the data once", h.ID)
	}
	assert.Equal(t, map[string]string{"tunetimeout-check": "golang", "tunetimeout-check-system": "system"}, ids)
	// pre-commit's golang hooks run go install ./... at the repository's
	// root: it must be a module whose commands build.
	_, err := os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)

	bin := tunetimeout(t)
	config := filepath.Join(root, "analysis", "testdata", "check", "envoy-250ms.yaml")
	data := filepath.Join(root, "testdata", "mixture.csv")
	for _, c := range []struct {
		name  string
		args  []string
		files []string
		code  int
		out   string
	}{
		{"error finding", []string{"--data", data}, []string{config}, 1, "TT-CHECK-TIMEOUT-CUTS-OFF"},
		{"below fail-on", []string{"--data", data, "--fail-on", "never"}, []string{config}, 0, "TT-CHECK-TIMEOUT-CUTS-OFF"},
		{"no data named", nil, []string{config}, 2, "--data"},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv := append(strings.Fields(hooks[1].Entry)[1:], c.args...)
			cmd := exec.Command(bin, append(argv, c.files...)...)
			out, err := cmd.CombinedOutput()
			code := 0
			if err != nil {
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit)
				code = exit.ExitCode()
			}
			assert.Equal(t, c.code, code, "%s", out)
			assert.Contains(t, string(out), c.out)
		})
	}

	broken := strings.Replace(string(body), "pass_filenames:", "pass_filename:", 1)
	err = decodeStrict(t, []byte(broken), &[]hook{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field pass_filename not found")
}
