// Package helm tests the chart in tunetimeout/: Helm (pinned in
// .ci/tools.sh) lints and renders it, every rendered object is decoded
// strictly into its Kubernetes or prometheus-operator Go type (a field the
// type does not have fails, as the API server would refuse it), the
// container's arguments are run through the binary's own flag parsing, and
// deliberately broken values fail.
package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/deploy/internal/testbin"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const chart = "tunetimeout"

var root = filepath.Join("..", "..")

// helmBin is helm on PATH (.ci/tools.sh installs it); without it the
// tests skip, unless TUNETIMEOUT_E2E is set.
func helmBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("TUNETIMEOUT_E2E") != "" {
			t.Fatal("helm not on PATH: bash .ci/tools.sh installs it")
		}
		t.Skip("helm not on PATH: bash .ci/tools.sh installs it (TUNETIMEOUT_E2E=1 makes this a failure)")
	}
	return p
}

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) { testbin.Main(m) }

// tunetimeout builds the repository's binary once for the tests.
func tunetimeout(t *testing.T) string { return testbin.Tool(t, root) }

// generated writes what tunetimeout rules makes of testdata/report.json
// (two routes, 1s and 800ms): a PrometheusRule and a Grafana dashboard,
// the files the chart's prometheusRule and grafanaDashboard take.
func generated(t *testing.T, kind string) (rules, dashboard string) {
	t.Helper()
	dir := t.TempDir()
	rules, dashboard = filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "dashboard.json")
	out, err := exec.Command(tunetimeout(t), "rules", "--report", filepath.Join("testdata", "report.json"),
		"--by", "route", "--selector", `{job="api"}`, "--kind", kind,
		"--output", rules, "--grafana", dashboard).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return rules, dashboard
}

// render runs helm template on the chart, returning its output, or the
// error helm printed.
func render(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), append([]string{"template", "tt", chart, "--namespace", "monitoring"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

// objects are the rendered objects, decoded strictly by kind.
type objects struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	configMaps     []*corev1.ConfigMap
	serviceMonitor *monitoringv1.ServiceMonitor
	prometheusRule *monitoringv1.PrometheusRule
	kinds          []string
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode decodes each YAML document of a rendering into the Go type of
// its kind with unknown and duplicate fields failing (sigs.k8s.io/yaml's
// UnmarshalStrict: the JSON tags of k8s.io/api and prometheus-operator).
func decode(rendered string) (objects, error) {
	var objs objects
	for _, doc := range docSep.Split(rendered, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return objs, err
		}
		objs.kinds = append(objs.kinds, tm.APIVersion+"/"+tm.Kind)
		var target any
		switch tm.APIVersion + "/" + tm.Kind {
		case "apps/v1/Deployment":
			objs.deployment = &appsv1.Deployment{}
			target = objs.deployment
		case "v1/Service":
			objs.service = &corev1.Service{}
			target = objs.service
		case "v1/ConfigMap":
			cm := &corev1.ConfigMap{}
			objs.configMaps = append(objs.configMaps, cm)
			target = cm
		case "monitoring.coreos.com/v1/ServiceMonitor":
			objs.serviceMonitor = &monitoringv1.ServiceMonitor{}
			target = objs.serviceMonitor
		case "monitoring.coreos.com/v1/PrometheusRule":
			objs.prometheusRule = &monitoringv1.PrometheusRule{}
			target = objs.prometheusRule
		default:
			return objs, fmt.Errorf("an object of no known type: %s/%s", tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
			return objs, fmt.Errorf("%s: %w", tm.Kind, err)
		}
	}
	return objs, nil
}

// TestChartAll: with every optional part on, the chart renders a
// Deployment, a Service, a ServiceMonitor, the PrometheusRule of rules
// --kind prometheusrule and the dashboard ConfigMap, each a valid object
// of its type; the Deployment runs watch non-root on a read-only root,
// probes /-/healthy and /-/ready, reads each credential from a mounted
// Secret, and the binary accepts its arguments.
func TestChartAll(t *testing.T) {
	rules, dashboard := generated(t, "prometheusrule")
	out, err := render(t, "-f", filepath.Join("testdata", "values-all.yaml"),
		"--set-file", "prometheusRule.manifest="+rules, "--set-file", "grafanaDashboard.json="+dashboard)
	require.NoError(t, err)
	objs, err := decode(out)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"apps/v1/Deployment", "v1/Service", "v1/ConfigMap",
		"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}, objs.kinds)

	d := objs.deployment
	require.NotNil(t, d)
	assert.Equal(t, "tt-tunetimeout", d.Name)
	assert.Equal(t, "monitoring", d.Namespace)
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, "ghcr.io/tunetimeout/tunetimeout:0.1.0", c.Image)
	assert.Equal(t, []string{
		"watch",
		"--url=http://prometheus-operated.monitoring:9090",
		"--metric=http_request_duration_seconds",
		`--selector={job="api"}`,
		"--listen=:9847",
		"--every=1m",
		"--window=1d",
		"--by=route,method",
		"--timeout=1s",
		"--timeout=2.5s",
		"--pool=200",
		"--bearer-token-file=/etc/tunetimeout/bearer-token/token",
		"--basic-auth-user=tunetimeout",
		"--basic-auth-password-file=/etc/tunetimeout/basic-auth/password",
		"--header=@/etc/tunetimeout/headers/headers",
		"--ca-file=/etc/tunetimeout/ca/ca.crt",
		"--false-timeouts=0.5%",
		"--attempts=2",
	}, c.Args)
	assertFlagsAccepted(t, c.Args)

	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, "/-/healthy", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/-/ready", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port.String())
	require.Len(t, c.Ports, 1)
	assert.Equal(t, int32(9847), c.Ports[0].ContainerPort)
	assert.Equal(t, "64Mi", c.Resources.Requests.Memory().String())
	assert.Equal(t, "256Mi", c.Resources.Limits.Memory().String())

	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.True(t, *sc.RunAsNonRoot)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.NotNil(t, spec.SecurityContext)
	assert.Equal(t, int64(65532), *spec.SecurityContext.RunAsUser, "the image's user (deploy/image)")
	assert.False(t, *spec.AutomountServiceAccountToken)

	// Each credential is a Secret's key mounted where its flag reads it;
	// none is in the object itself.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	sources := map[string]string{}
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil:
			sources[v.Name] = "secret " + v.Secret.SecretName + " " + v.Secret.Items[0].Key
		case v.ConfigMap != nil:
			sources[v.Name] = "configmap " + v.ConfigMap.Name + " " + v.ConfigMap.Items[0].Key
		case v.EmptyDir != nil:
			sources[v.Name] = "emptyDir"
		}
	}
	assert.Equal(t, map[string]string{
		"bearer-token": "secret prometheus-token token",
		"basic-auth":   "secret prometheus-basic-auth password",
		"headers":      "secret prometheus-headers headers",
		"ca":           "configmap prometheus-ca ca.crt",
		"tmp":          "emptyDir",
	}, sources)
	assert.Equal(t, "/etc/tunetimeout/bearer-token", mounts["bearer-token"])
	assert.Equal(t, "/etc/tunetimeout/basic-auth", mounts["basic-auth"])
	assert.Empty(t, c.Env, "no credential in the environment")

	svc := objs.service
	require.NotNil(t, svc)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(9847), svc.Spec.Ports[0].Port)
	assert.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector, "the Service selects the Deployment's pods")
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, d.Spec.Template.Labels[k])
	}

	sm := objs.serviceMonitor
	require.NotNil(t, sm)
	require.Len(t, sm.Spec.Endpoints, 1)
	assert.Equal(t, "http", sm.Spec.Endpoints[0].Port)
	assert.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	assert.Equal(t, svc.Spec.Selector, sm.Spec.Selector.MatchLabels)
	assert.Equal(t, "kube-prometheus-stack", sm.Labels["release"])

	// The PrometheusRule holds the groups rules wrote, unchanged.
	pr := objs.prometheusRule
	require.NotNil(t, pr)
	var want monitoringv1.PrometheusRule
	body, err := os.ReadFile(rules)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(body, &want))
	require.NotEmpty(t, want.Spec.Groups)
	assert.Equal(t, want.Spec, pr.Spec)
	assert.Equal(t, "monitoring", pr.Namespace)
	assert.Equal(t, "kube-prometheus-stack", pr.Labels["release"])
	var names []string
	for _, g := range pr.Spec.Groups {
		names = append(names, g.Name)
	}
	assert.Contains(t, names, "tunetimeout:/api")

	require.Len(t, objs.configMaps, 1)
	cm := objs.configMaps[0]
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
	assert.Equal(t, "Timeouts", cm.Annotations["grafana_folder"])
	body, err = os.ReadFile(dashboard)
	require.NoError(t, err)
	assert.Equal(t, string(body), cm.Data["tunetimeout.json"], "the dashboard, byte for byte")
}

// assertFlagsAccepted runs the binary with the container's arguments and
// --help: cobra parses every flag before it looks at --help, so a flag
// watch does not have, or a bad value of a typed one, fails.
func assertFlagsAccepted(t *testing.T, args []string) {
	t.Helper()
	out, err := exec.Command(tunetimeout(t), append(append([]string{}, args...), "--help")...).CombinedOutput()
	require.NoError(t, err, "the binary refuses the chart's arguments: %s", out)
	assert.Contains(t, string(out), "tunetimeout watch")
}

// TestChartDefaults: with only the required values, the chart renders a
// Deployment and a Service, nothing optional, and the binary accepts the
// arguments; helm lint passes.
func TestChartDefaults(t *testing.T) {
	set := []string{"--set", "prometheus.url=http://prometheus:9090", "--set", "prometheus.metric=http_request_duration_seconds"}
	out, err := render(t, set...)
	require.NoError(t, err)
	objs, err := decode(out)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"apps/v1/Deployment", "v1/Service"}, objs.kinds)
	args := objs.deployment.Spec.Template.Spec.Containers[0].Args
	assert.Equal(t, []string{"watch", "--url=http://prometheus:9090", "--metric=http_request_duration_seconds",
		"--listen=:9847", "--every=5m", "--window=7d"}, args)
	assertFlagsAccepted(t, args)
	var mounts []string
	for _, m := range objs.deployment.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.Name)
	}
	assert.Equal(t, []string{"tmp"}, mounts, "no credential mounted when none is named")

	lint := exec.Command(helmBin(t), append([]string{"lint", "--strict", chart}, set...)...)
	lout, err := lint.CombinedOutput()
	require.NoError(t, err, "%s", lout)
	assert.Contains(t, string(lout), "0 chart(s) failed")
}

// TestChartBroken: values that are wrong fail the rendering with a message
// saying what to give, and a field no Kubernetes type has fails decoding.
func TestChartBroken(t *testing.T) {
	rules, _ := generated(t, "rules")
	base := []string{"--set", "prometheus.url=http://prometheus:9090", "--set", "prometheus.metric=m"}
	for _, c := range []struct {
		name  string
		args  []string
		error string
	}{
		{"no url", []string{"--set", "prometheus.metric=m"}, "prometheus.url is required"},
		{"a token as a value", append(base, "--set", "prometheus.bearerToken=s3cr3t"), "additional properties 'bearerToken' not allowed"},
		{"a password in the url", []string{"--set", "prometheus.url=http://u:pw@prometheus:9090", "--set", "prometheus.metric=m"}, "/prometheus/url"},
		{"a misspelled value", append(base, "--set", "watch.timeout={1s}"), "additional properties 'timeout' not allowed"},
		{"a bad duration", append(base, "--set", "watch.every=5 minutes"), "/watch/every"},
		{"a user without its password", append(base, "--set", "prometheus.basicAuth.user=u"), "prometheus.basicAuth.passwordSecret.name is required"},
		{"a rules file, not a PrometheusRule", append(base, "--set", "prometheusRule.enabled=true", "--set-file", "prometheusRule.manifest="+rules),
			"is not a monitoring.coreos.com/v1 PrometheusRule"},
		{"a PrometheusRule without its file", append(base, "--set", "prometheusRule.enabled=true"), "prometheusRule.manifest is required"},
		{"rules instead of the dashboard", append(base, "--set", "grafanaDashboard.enabled=true", "--set-file", "grafanaDashboard.json="+rules),
			"grafanaDashboard.json is not a Grafana dashboard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, c.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.error)
		})
	}

	// An extra argument watch does not have renders, and the binary refuses it.
	out, err := render(t, append(base, "--set", "watch.extraArgs={--no-such-flag}")...)
	require.NoError(t, err)
	objs, err := decode(out)
	require.NoError(t, err)
	args := objs.deployment.Spec.Template.Spec.Containers[0].Args
	cmd := exec.Command(tunetimeout(t), append(args, "--help")...)
	bout, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(bout), "unknown flag: --no-such-flag")

	// A template that wrote a field the type does not have (a misspelled
	// probe path here) fails strict decoding.
	out, err = render(t, base...)
	require.NoError(t, err)
	broken := strings.Replace(out, "path: /-/ready", "paht: /-/ready", 1)
	require.NotEqual(t, out, broken)
	_, err = decode(broken)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "paht"`)
}
