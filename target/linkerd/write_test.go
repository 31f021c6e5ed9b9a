package linkerd_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
)

// TestLinkerdHTTPStatuses: Linkerd's policy controller takes in
// retry.linkerd.io/http any status from 100 to 599, a range, 5xx or
// gateway-error (linkerd2 policy-controller/k8s/index/src/outbound/index/
// http.rs, parse_http_retry), so the call policy's 408 is written, not
// left out as "not expressible". (429 is not retried: Linkerd cannot wait
// for its Retry-After.)
func TestLinkerdHTTPStatuses(t *testing.T) {
	body, err := linkerd.Target.Render(targettest.LoadReport(t, "deadline.json"), target.Options{})
	require.NoError(t, err)
	s := string(body)
	assert.Contains(t, s, `retry.linkerd.io/http: "408,`)
	assert.NotContains(t, s, "left out: connect-failure, refused-stream, 408")
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "retry.linkerd.io/http: "); ok {
			for _, c := range strings.Split(strings.Trim(v, `"`), ",") {
				assert.True(t, linkerd.Condition(c, false), "%q is not a condition Linkerd takes", c)
			}
		}
	}
}

// TestRetriesOffLinkerdAnnotate removes the annotations the Linkerd
// header names from the routes it wrote: afterwards no route has a retry
// condition, and every one that retried keeps retry.linkerd.io/limit (so
// its annotations still override the Service's).
func TestRetriesOffLinkerdAnnotate(t *testing.T) {
	for _, f := range targettest.Fixtures {
		if f.Name != "policy" && f.Name != "deadline" {
			continue
		}
		body, err := linkerd.Target.Render(targettest.LoadReport(t, f.Report), f.Opts)
		require.NoError(t, err)
		docs := targettest.DecodeYAMLDocs(t, body)
		note := targettest.RetriesOffNote(t, linkerd.Target, f)
		re := regexp.MustCompile(`kubectl annotate -n (\S+) httproute\.policy\.linkerd\.io/(\S+)((?: retry\.linkerd\.io/\S+-)+)`)
		cmds := re.FindAllStringSubmatch(note, -1)
		require.NotEmpty(t, cmds, "%s: %s", f.Name, note)
		for _, m := range cmds {
			var ann map[string]any
			for _, d := range docs {
				if d["kind"] == "HTTPRoute" && targettest.Dig(d, "metadata", "name") == m[2] && targettest.Dig(d, "metadata", "namespace") == m[1] {
					ann, _ = targettest.Dig(d, "metadata", "annotations").(map[string]any)
				}
			}
			require.NotNil(t, ann, "%s: no HTTPRoute %s/%s", f.Name, m[1], m[2])
			for _, k := range strings.Fields(m[3]) {
				delete(ann, strings.TrimSuffix(k, "-"))
			}
			assert.Contains(t, ann, "retry.linkerd.io/limit", "%s %s", f.Name, m[2])
		}
		for _, d := range docs {
			ann, _ := targettest.Dig(d, "metadata", "annotations").(map[string]any)
			for _, k := range []string{"retry.linkerd.io/http", "retry.linkerd.io/grpc", "retry.linkerd.io/timeout"} {
				assert.NotContains(t, ann, k, "%s: route %v still retries", f.Name, targettest.Dig(d, "metadata", "name"))
			}
		}
	}
}
