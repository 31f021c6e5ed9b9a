package targettest

import (
	"bytes"
	"encoding/json"
	"fmt" //nolint:staticcheck // the decoder Istio's own types use
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// GatewayDuration is the pattern of the Gateway API CRDs' durations.
var GatewayDuration = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

var gatewayPathChars = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// UpstreamServer is the server line of the nginx and HAProxy snippets: the
// tests point it at an address, because nginx and HAProxy resolve names
// when they check.
var UpstreamServer = regexp.MustCompile(`(?m)^(\s*server\s+(?:\S+\s+)?)[^\s:]+:80\b`)

// YAMLDocs splits a multi-document YAML stream.
func YAMLDocs(body []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(body), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// stripComments drops the YAML comment lines of s.
func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// StrictJSON decodes JSON into v, refusing unknown fields.
func StrictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// --- Istio: the API types, decoded by the jsonpb decoder Istio's
// generated UnmarshalJSON uses, but refusing unknown fields; then the CRD's
// rules (durations >= 1ms).

// K8sObject is a Kubernetes object with its spec undecoded.
type K8sObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
}

// DecodeK8s decodes a YAML document strictly as an object of apiVersion
// and kind, with a valid name and namespace.
func DecodeK8s(doc []byte, apiVersion, kind string) (K8sObject, error) {
	var o K8sObject
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return o, err
	}
	if err := StrictJSON(j, &o); err != nil {
		return o, err
	}
	if o.APIVersion != apiVersion || o.Kind != kind {
		return o, fmt.Errorf("got %s %s, want %s %s", o.APIVersion, o.Kind, apiVersion, kind)
	}
	if errs := validation.IsDNS1123Subdomain(o.Metadata.Name); len(errs) > 0 {
		return o, fmt.Errorf("metadata.name %q: %s", o.Metadata.Name, errs[0])
	}
	if errs := validation.IsDNS1123Label(o.Metadata.Namespace); len(errs) > 0 {
		return o, fmt.Errorf("metadata.namespace %q: %s", o.Metadata.Namespace, errs[0])
	}
	return o, nil
}

// --- Tools: go vet, python3, nginx, HAProxy.

// RequireTool returns the path of a binary, or skips the test (fails it
// under TUNETIMEOUT_E2E=1, as in .ci/run) when it is missing.
func RequireTool(t *testing.T, name, install string) string {
	t.Helper()
	return e2etest.RequireBinary(t, name, install)
}

// RunTool runs a program in dir, its output in the error when it fails.
func RunTool(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// GatewayCheckPath holds a path match of an HTTPRoute (the Gateway API's,
// and Linkerd's) to the rules of the CRD.
func GatewayCheckPath(p *gatewayv1.HTTPPathMatch) error {
	if p == nil || p.Value == nil || p.Type == nil {
		return nil
	}
	v, typ := *p.Value, string(*p.Type)
	if len(v) > 1024 {
		return fmt.Errorf("path of %d characters", len(v))
	}
	switch typ {
	case "Exact", "PathPrefix":
	case "RegularExpression":
		return nil
	default:
		return fmt.Errorf("path type %q", typ)
	}
	switch {
	case !strings.HasPrefix(v, "/"):
		return fmt.Errorf("path %q is not absolute", v)
	case strings.Contains(v, "//"), strings.Contains(v, "/./"), strings.Contains(v, "/../"),
		strings.Contains(v, "%2f"), strings.Contains(v, "%2F"), strings.Contains(v, "#"),
		strings.HasSuffix(v, "/.."), strings.HasSuffix(v, "/."):
		return fmt.Errorf("path %q breaks a rule of the CRD", v)
	case !gatewayPathChars.MatchString(v):
		return fmt.Errorf("path %q holds characters the CRD refuses", v)
	}
	return nil
}

// RetryConditions are the retry_on conditions Envoy, and the retryOn
// policies Istio, accept besides status
// codes (Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on).
var RetryConditions = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true, "connect-failure": true,
	"envoy-ratelimited": true, "retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true,
	"retriable-headers": true, "http3-post-connect-failure": true, "cancelled": true, "deadline-exceeded": true,
	"internal": true, "resource-exhausted": true, "unavailable": true,
}
