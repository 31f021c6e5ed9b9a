// Package action tests the GitHub Action of the repository root
// (action.yml), its example workflow (docs/examples/check.yml) and the
// pre-commit hook (.pre-commit-hooks.yaml): actionlint (pinned in
// .ci/tools.sh) lints the example and the action's steps, a deliberately
// broken workflow fails it, and the action's install and check steps run
// on the snapshot release in ../../dist.
package action

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var root = filepath.Join("..", "..")

// The action metadata's keys, as GitHub documents them
// (https://docs.github.com/en/actions/reference/workflows-and-actions/metadata-syntax),
// for a composite action; a key outside them fails decoding.
type actionMetadata struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
	Inputs map[string]struct {
		Description        string `yaml:"description"`
		Required           bool   `yaml:"required"`
		Default            string `yaml:"default"`
		DeprecationMessage string `yaml:"deprecationMessage"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

type step struct {
	Name             string            `yaml:"name,omitempty"`
	ID               string            `yaml:"id,omitempty"`
	If               string            `yaml:"if,omitempty"`
	Run              string            `yaml:"run,omitempty"`
	Shell            string            `yaml:"shell,omitempty"`
	Uses             string            `yaml:"uses,omitempty"`
	With             map[string]string `yaml:"with,omitempty"`
	Env              map[string]string `yaml:"env,omitempty"`
	WorkingDirectory string            `yaml:"working-directory,omitempty"`
	ContinueOnError  bool              `yaml:"continue-on-error,omitempty"`
}

// decodeStrict decodes YAML into v, failing on a key v has no field for.
func decodeStrict(t *testing.T, body []byte, v any) error {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(body))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func readAction(t *testing.T) actionMetadata {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(root, "action.yml"))
	require.NoError(t, err)
	var md actionMetadata
	require.NoError(t, decodeStrict(t, body, &md))
	return md
}

// TestActionMetadata: a composite action whose version and configs are
// required, that writes SARIF, uploads it with GitHub's upload-sarif and
// fails on check's exit code 1 only after the upload.
func TestActionMetadata(t *testing.T) {
	md := readAction(t)
	assert.Equal(t, "composite", md.Runs.Using)
	assert.True(t, md.Inputs["version"].Required, "the release is pinned by the workflow, never latest")
	assert.True(t, md.Inputs["configs"].Required)
	assert.Equal(t, "error", md.Inputs["fail-on"].Default, "check's own default")
	var names []string
	for _, s := range md.Runs.Steps {
		names = append(names, s.ID+":"+s.Name)
		if s.Run != "" {
			assert.Equal(t, "bash", s.Shell, "step %q: composite run steps need a shell", s.Name)
			assert.NotContains(t, s.Run, "${{", "step %q: inputs reach scripts through env, never expanded into them", s.Name)
		}
	}
	require.Len(t, md.Runs.Steps, 4, "steps %v", names)
	assert.Equal(t, "github/codeql-action/upload-sarif@v4", md.Runs.Steps[2].Uses)
	assert.Equal(t, "${{ steps.check.outputs.sarif-file }}", md.Runs.Steps[2].With["sarif_file"])
	assert.Equal(t, "steps.check.outputs.exit-code == '1'", md.Runs.Steps[3].If)
	assert.Contains(t, md.Runs.Steps[1].Run, `--format sarif --output "$TT_SARIF" --fail-on "$TT_FAIL_ON"`)

	// A key the action metadata does not have is an error.
	err := decodeStrict(t, []byte("name: x\nruns:\n  using: composite\n  step: []\n"), &actionMetadata{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field step not found")
}

// actionlintBin is actionlint on PATH (.ci/tools.sh installs it); without
// it the test skips, unless TUNETIMEOUT_E2E is set.
func actionlintBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("actionlint")
	if err != nil {
		if os.Getenv("TUNETIMEOUT_E2E") != "" {
			t.Fatal("actionlint not on PATH: bash .ci/tools.sh installs it")
		}
		t.Skip("actionlint not on PATH: bash .ci/tools.sh installs it (TUNETIMEOUT_E2E=1 makes this a failure)")
	}
	return p
}

// shellcheck: actionlint runs shellcheck (Debian's, which .ci/run
// installs) on the scripts when it is on PATH; without it the script
// cases skip, unless TUNETIMEOUT_E2E is set.
func shellcheck(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("shellcheck"); err != nil {
		if os.Getenv("TUNETIMEOUT_E2E") != "" {
			t.Fatal("shellcheck not on PATH: apt-get install shellcheck")
		}
		t.Skip("shellcheck not on PATH: apt-get install shellcheck (TUNETIMEOUT_E2E=1 makes this a failure)")
	}
}

type lintError struct {
	Message  string `json:"message"`
	Filepath string `json:"filepath"`
	Line     int    `json:"line"`
	Kind     string `json:"kind"`
}

// lintProject writes a repository actionlint recognizes (.git and
// .github/workflows) holding action.yml at its root, the example workflow
// using it as ./ (actionlint checks a local action's inputs, never a
// remote one's), and a reusable workflow whose job runs the action's
// steps with its inputs as workflow_call inputs, so that actionlint checks
// their expressions and contexts too (actionlint knows no inputs of
// upload-sarif: TestActionMetadata checks them). It
// returns actionlint's errors.
func lintProject(t *testing.T, action, example []byte) []lintError {
	t.Helper()
	bin := actionlintBin(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	wf := filepath.Join(dir, ".github", "workflows")
	require.NoError(t, os.MkdirAll(wf, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "action.yml"), action, 0o644))
	local := bytes.ReplaceAll(example, []byte("uses: tunetimeout/tunetimeout@v0.1.0"), []byte("uses: ./"))
	require.NotEqual(t, example, local, "the example uses tunetimeout/tunetimeout@v0.1.0")
	require.NoError(t, os.WriteFile(filepath.Join(wf, "example.yml"), local, 0o644))

	var md actionMetadata
	require.NoError(t, decodeStrict(t, action, &md))
	type input struct {
		Type     string `yaml:"type"`
		Required bool   `yaml:"required"`
	}
	inputs := map[string]input{}
	for name, in := range md.Inputs {
		inputs[name] = input{Type: "string", Required: in.Required}
	}
	steps := md.Runs.Steps
	wrapper := map[string]any{
		"on": map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"steps": map[string]any{
			"runs-on": "ubuntu-latest",
			"steps":   steps,
		}},
	}
	body, err := yaml.Marshal(wrapper)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(wf, "action-steps.yml"), body, 0o644))

	cmd := exec.Command(bin, "-format", "{{json .}}")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var errs []lintError
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
		require.Equal(t, 1, exit.ExitCode(), "actionlint failed, not on the files: %s", stderr.String())
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &errs), "actionlint's output: %s", stdout.String())
	return errs
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// TestActionlint: the example workflow and the action's steps pass
// actionlint; each deliberately broken copy fails it with its message.
func TestActionlint(t *testing.T) {
	action := readFile(t, filepath.Join(root, "action.yml"))
	example := readFile(t, filepath.Join(root, "docs", "examples", "check.yml"))
	errs := lintProject(t, action, example)
	assert.Empty(t, errs)

	for _, c := range []struct {
		name            string
		file            string // action or example
		old, new, error string
	}{
		{"misspelled input", "example", "fail-on: error", "fail_on: error", `input "fail_on" is not defined in action "tunetimeout check" defined at "./"`},
		{"required input missing", "example", "          version: 0.1.0\n", "", `missing input "version" which is required by action "tunetimeout check" defined at "./"`},
		{"unknown permission", "example", "security-events: write", "security-event: write", `unknown permission scope "security-event"`},
		{"undefined input in a step", "action", "${{ inputs.fail-on }}\n        TT_SARIF", "${{ inputs.failon }}\n        TT_SARIF", `property "failon" is not defined`},
		{"undefined step output", "action", "steps.check.outputs.exit-code == '1'", "steps.checks.outputs.exit-code == '1'", `property "checks" is not defined`},
		{"unquoted path in a script", "action", `tar -xzf "$dir/$archive"`, `tar -xzf $dir/$archive`, "SC2086"},
		{"undefined input in a condition", "action", "inputs.upload-sarif == 'true'", "inputs.upload_sarif == 'true'", `property "upload_sarif" is not defined`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.error, "SC") {
				shellcheck(t)
			}
			a, e := action, example
			target := &e
			if c.file == "action" {
				target = &a
			}
			require.Equal(t, 1, bytes.Count(*target, []byte(c.old)), "%q once in the %s", c.old, c.file)
			*target = bytes.Replace(*target, []byte(c.old), []byte(c.new), 1)
			errs := lintProject(t, a, e)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Message)
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, strings.Join(msgs, "\n"), c.error)
		})
	}
}

// runner runs the action's run steps as GitHub's runner does, in a
// directory of its own that holds its GITHUB_OUTPUT and GITHUB_PATH files.
type runner struct {
	dir, output, path string
}

func newRunner(t *testing.T) runner {
	t.Helper()
	dir := t.TempDir()
	r := runner{dir: dir, output: filepath.Join(dir, "github_output"), path: filepath.Join(dir, "github_path")}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "temp"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "work"), 0o755))
	return r
}

// run runs one of the action's run steps as the runner does (bash, its env
// with the inputs, the runner's files), returning its combined output and
// exit code; outputs reads what it wrote to GITHUB_OUTPUT.
func (r runner) run(t *testing.T, s step, inputs map[string]string) (string, int) {
	t.Helper()
	require.Equal(t, "bash", s.Shell)
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s.Run)
	cmd.Dir = filepath.Join(r.dir, "work")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.dir, "RUNNER_OS=Linux", "RUNNER_ARCH=X64",
		"RUNNER_TEMP=" + filepath.Join(r.dir, "temp"), "GITHUB_OUTPUT=" + r.output, "GITHUB_PATH=" + r.path}
	// The PATH entries the install step added, as the runner adds them to
	// the following steps.
	if b, err := os.ReadFile(r.path); err == nil {
		for _, p := range strings.Fields(string(b)) {
			env[0] = "PATH=" + p + ":" + strings.TrimPrefix(env[0], "PATH=")
		}
	}
	for k, v := range s.Env {
		name := strings.TrimSuffix(strings.TrimPrefix(v, "${{ inputs."), " }}")
		require.NotEqual(t, v, name, "env %s=%s is an input", k, v)
		env = append(env, k+"="+inputs[name])
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		return string(out), exit.ExitCode()
	}
	return string(out), 0
}

func (r runner) outputs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(r.output)
	require.NoError(t, err)
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "GITHUB_OUTPUT line %q", line)
		m[k] = v
	}
	return m
}

// snapshot is the release GoReleaser built in ../../dist: its directory
// and version. Without dist/ the test skips, unless TUNETIMEOUT_E2E is set.
func snapshot(t *testing.T) (string, string) {
	t.Helper()
	dist, err := filepath.Abs(filepath.Join(root, "dist"))
	require.NoError(t, err)
	body, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
	if os.IsNotExist(err) && os.Getenv("TUNETIMEOUT_E2E") == "" {
		t.Skip("no dist/: run goreleaser release --snapshot --clean first (TUNETIMEOUT_E2E=1 makes this a failure)")
	}
	require.NoError(t, err)
	var meta struct {
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal(body, &meta))
	return dist, meta.Version
}

// TestActionRuns: the install step installs the snapshot release after
// checking its sum; the check step reports an Envoy route whose 250ms
// timeout cuts off the worked example's slow calls as SARIF, with exit
// code 1 for the last step to fail the job on, 0 with fail-on never.
func TestActionRuns(t *testing.T) {
	dist, version := snapshot(t)
	md := readAction(t)
	install, check := md.Runs.Steps[0], md.Runs.Steps[1]
	config, err := filepath.Abs(filepath.Join(root, "analysis", "testdata", "check", "envoy-250ms.yaml"))
	require.NoError(t, err)
	data, err := filepath.Abs(filepath.Join(root, "testdata", "mixture.csv"))
	require.NoError(t, err)

	r := newRunner(t)
	inputs := map[string]string{}
	for name, in := range md.Inputs {
		inputs[name] = in.Default
	}
	inputs["version"] = "v" + version
	inputs["release-url"] = "file://" + dist
	out, code := r.run(t, install, inputs)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, version, "tunetimeout version prints the release's version")

	inputs["configs"] = config
	inputs["data"] = data
	out, code = r.run(t, check, inputs)
	require.Equal(t, 0, code, "the step itself succeeds so the upload runs: %s", out)
	got := r.outputs(t)
	assert.Equal(t, "1", got["exit-code"])
	assert.Equal(t, "tunetimeout.sarif", got["sarif-file"])
	body, err := os.ReadFile(filepath.Join(r.dir, "work", "tunetimeout.sarif"))
	require.NoError(t, err)
	var sarif struct {
		Runs []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
				Level  string `json:"level"`
			} `json:"results"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(body, &sarif))
	require.Len(t, sarif.Runs, 1)
	var rules []string
	for _, res := range sarif.Runs[0].Results {
		rules = append(rules, res.RuleID+":"+res.Level)
	}
	assert.Contains(t, rules, "TT-CHECK-TIMEOUT-CUTS-OFF:error")

	require.NoError(t, os.Remove(r.output))
	inputs["fail-on"] = "never"
	out, code = r.run(t, check, inputs)
	require.Equal(t, 0, code, out)
	assert.Equal(t, "0", r.outputs(t)["exit-code"])

	// A config pattern that matches nothing, and a wrong flag, fail the
	// step itself (no report to upload).
	inputs["configs"] = filepath.Join(filepath.Dir(config), "no-such-*.yaml")
	out, code = r.run(t, check, inputs)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `::error::tunetimeout: no file matches config pattern`)
	inputs["configs"] = config
	inputs["args"] = "--by route\n--pool notanumber"
	out, code = r.run(t, check, inputs)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `--pool`)
}

// TestActionInstallRefuses: an archive that does not match checksums.txt,
// a version that is not a release's and an unsupported runner fail the
// install step before anything runs.
func TestActionInstallRefuses(t *testing.T) {
	dist, version := snapshot(t)
	install := readAction(t).Runs.Steps[0]
	archive := "tunetimeout_" + version + "_linux_amd64.tar.gz"
	tampered := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dist, archive))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tampered, archive), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tampered, "checksums.txt"),
		[]byte(strings.Repeat("0", 64)+"  "+archive+"\n"), 0o644))

	for _, c := range []struct {
		name, version, url, error string
	}{
		{"tampered", version, "file://" + tampered, "does not match checksums.txt"},
		{"latest", "latest", "file://" + dist, `version "latest" is not a release version`},
		{"missing", "9.9.9", "file://" + dist, "curl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRunner(t)
			out, code := r.run(t, install, map[string]string{"version": c.version, "release-url": c.url})
			assert.NotEqual(t, 0, code)
			assert.Contains(t, out, c.error)
			_, err := os.Stat(r.path)
			assert.True(t, os.IsNotExist(err), "nothing added to PATH")
		})
	}
}
