package target

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The switch that breaks a retry loop (docs/policy.md#the-switch-that-breaks-the-loop):
// every target says in its header how to turn its retries off during an
// incident without a deploy, when the retries' own load keeps a dependency
// saturated after the trigger is gone (docs/metastability.md). The clients
// the tool writes in code (Go, httpx) read a file on every call; the
// proxies and meshes name the setting to change and how to apply it.

const (
	// RetriesOffEnv names the file whose presence turns the Go and httpx
	// snippets' retries off; read once, when the process starts.
	RetriesOffEnv = "TUNETIMEOUT_RETRIES_OFF_FILE"
	// RetriesOffDefault is that file without the variable.
	RetriesOffDefault = "/etc/tunetimeout/retries-off"
)

// NoteRetriesOffFile says how to flip the file switch of a code snippet
// whose retry loop is fn. A ConfigMap mounted as a volume is updated in
// running pods by the kubelet, one mounted with subPath is not
// (https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically).
func NoteRetriesOffFile(d *Doc, fn string) {
	d.Note("Retries off during an incident, without a deploy or a restart: create the file named by the environment variable %s (default %s; the variable is read when the process starts), e.g. `touch %s`, or add the key retries-off to a ConfigMap mounted at %s (not with subPath: the kubelet then updates it in running pods). %s looks for the file on every call and, while it exists, makes one attempt per call whatever the policy; remove the file to restore retries.",
		RetriesOffEnv, RetriesOffDefault, RetriesOffDefault, "/etc/tunetimeout", fn)
}

// NginxRetriesOffSed and HAProxyRetriesOffSed are the edits that turn a
// written config's retries off, as sed expressions (POSIX extended): they
// match a directive at the start of a line only, so no comment changes.
const (
	NginxRetriesOffSed   = `s/^([[:space:]]*)proxy_next_upstream [^;]*;/\1proxy_next_upstream off;/`
	HAProxyRetriesOffSed = `s/^([[:space:]]*)retries [0-9]+/\1retries 0/`
)

// JSONPatchOp is one operation of a JSON Patch (RFC 6902), as kubectl
// patch --type=json takes it.
type JSONPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// KubectlJSONPatch is the command that applies ops to one resource. The
// patch is JSON in single quotes for a POSIX shell: its strings are
// paths and names the snippet wrote, never a quote.
func KubectlJSONPatch(resource, name, ns string, ops []JSONPatchOp) string {
	b, err := json.Marshal(ops)
	if err != nil { // ops hold strings, numbers and booleans only
		panic(err)
	}
	return fmt.Sprintf("kubectl patch %s %s -n %s --type=json -p '%s'", resource, name, ns, b)
}

// KubectlSwitchNote says how to turn a Kubernetes resource's retries off
// with the commands given, or that no route of the snippet retries.
func KubectlSwitchNote(d *Doc, what string, cmds []string, undo string) {
	if len(cmds) == 0 {
		d.Note("Retries off during an incident: no %s here retries.", what)
		return
	}
	d.Note("Retries off during an incident, without a deploy: %s; %s", strings.Join(cmds, "; "), undo)
}
