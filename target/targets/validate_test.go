package targets

// Validators: each snippet is read by the target's own code where a Go one
// exists (gRPC, Envoy's go-control-plane, Istio's API types with the jsonpb
// decoder Istio itself uses, the Gateway API types), by structs that mirror
// the published CRD where none does (Linkerd), and by the real tool where
// one is installed (go vet, python3, nginx, HAProxy). On top of the parse,
// each checks the limits the parser leaves to the server: a value in a
// snippet must be one its target accepts.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder Istio's own types use
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	networkingv1 "istio.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/target"
	grpctarget "github.com/tunetimeout/tunetimeout/target/grpc"
)

// goValidators are the validators that need no external binary; the
// property test runs them on every random report.
var goValidators = map[string]func(body []byte) error{
	"envoy":        validateEnvoy,
	"grpc":         validateGRPC,
	"istio":        validateIstio,
	"linkerd":      validateLinkerd,
	"gateway-api":  validateGateway,
	"resilience4j": validateResilience4j,
}

// yamlDocs splits a multi-document YAML stream.
func yamlDocs(body []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(body), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// strictJSON decodes JSON into v, refusing unknown fields.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// --- Envoy: go-control-plane's types and their protoc-gen-validate rules.

func validateEnvoy(body []byte) error {
	docs := yamlDocs(body)
	if len(docs) != 2 {
		return fmt.Errorf("want a RouteConfiguration and a Cluster, got %d documents", len(docs))
	}
	rj, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		return fmt.Errorf("route YAML: %w", err)
	}
	var rc routev3.RouteConfiguration
	if err := protojson.Unmarshal(rj, &rc); err != nil {
		return fmt.Errorf("RouteConfiguration: %w", err)
	}
	if err := rc.ValidateAll(); err != nil {
		return fmt.Errorf("RouteConfiguration: %w", err)
	}
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if re := r.GetMatch().GetSafeRegex().GetRegex(); re != "" {
				if _, err := regexp.Compile(re); err != nil { // Envoy's regexes are RE2, as Go's
					return fmt.Errorf("route %q: regex: %w", r.GetName(), err)
				}
			}
			ra := r.GetRoute()
			if ra.GetTimeout().AsDuration() <= 0 {
				return fmt.Errorf("route %q: timeout %v: 0 would disable it", r.GetName(), ra.GetTimeout())
			}
			rp := ra.GetRetryPolicy()
			if rp == nil {
				continue
			}
			bo := rp.GetRetryBackOff()
			// Envoy refuses max_interval < base_interval when it loads the route.
			if bo.GetMaxInterval() != nil && bo.GetMaxInterval().AsDuration() < bo.GetBaseInterval().AsDuration() {
				return fmt.Errorf("route %q: max_interval %v < base_interval %v", r.GetName(), bo.GetMaxInterval().AsDuration(), bo.GetBaseInterval().AsDuration())
			}
			if rp.GetNumRetries().GetValue() < 1 {
				return fmt.Errorf("route %q: a retry_policy without retries", r.GetName())
			}
			// Envoy ignores a per_try_timeout that is not below a non-zero
			// route timeout (router's FilterUtility::finalTimeout).
			if pt := rp.GetPerTryTimeout(); pt != nil && (pt.AsDuration() <= 0 || pt.AsDuration() >= ra.GetTimeout().AsDuration()) {
				return fmt.Errorf("route %q: per_try_timeout %v outside (0, timeout %v)", r.GetName(), pt.AsDuration(), ra.GetTimeout().AsDuration())
			}
			for _, c := range strings.Split(rp.GetRetryOn(), ",") {
				if !istioRetryConditions[c] {
					return fmt.Errorf("route %q: retry_on %q", r.GetName(), c)
				}
			}
			if hp := ra.GetHedgePolicy(); hp != nil && (!hp.GetHedgeOnPerTryTimeout() || rp.GetPerTryTimeout() == nil) {
				return fmt.Errorf("route %q: a hedge_policy without hedge_on_per_try_timeout and a per_try_timeout does nothing", r.GetName())
			}
		}
	}
	cj, err := yaml.YAMLToJSON(docs[1])
	if err != nil {
		return fmt.Errorf("cluster YAML: %w", err)
	}
	var c clusterv3.Cluster
	if err := protojson.Unmarshal(cj, &c); err != nil {
		return fmt.Errorf("Cluster: %w", err)
	}
	if err := c.ValidateAll(); err != nil {
		return fmt.Errorf("Cluster: %w", err)
	}
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		if p := th.GetRetryBudget().GetBudgetPercent(); p != nil && (p.GetValue() <= 0 || p.GetValue() > 100) {
			return fmt.Errorf("retry_budget.budget_percent %v outside (0, 100]", p.GetValue())
		}
	}
	return nil
}

// --- gRPC: grpc-go parses the service config, and reads it back.

func validateGRPC(body []byte) error {
	js := string(body)
	cc, err := grpc.NewClient("passthrough:///x",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(js))
	if err != nil {
		return fmt.Errorf("grpc.NewClient: %w", err)
	}
	cc.Close()

	// Read the parsed config back through a resolver's ClientConn.
	built := make(chan resolver.ClientConn, 1)
	r := manual.NewBuilderWithScheme("tunetimeout")
	r.BuildCallback = func(_ resolver.Target, c resolver.ClientConn, _ resolver.BuildOptions) { built <- c }
	cc, err = grpc.NewClient("tunetimeout:///x", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(r))
	if err != nil {
		return err
	}
	defer cc.Close()
	cc.Connect()
	var rcc resolver.ClientConn
	select {
	case rcc = <-built:
	case <-time.After(10 * time.Second):
		return errors.New("the gRPC resolver was not built")
	}
	res := rcc.ParseServiceConfig(js)
	if res.Err != nil {
		return res.Err
	}
	sc, ok := res.Config.(*grpc.ServiceConfig)
	if !ok {
		return fmt.Errorf("parsed config is a %T", res.Config)
	}
	var raw struct {
		MethodConfig []json.RawMessage `json:"methodConfig"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return err
	}
	if len(sc.Methods) != len(raw.MethodConfig) { //nolint:staticcheck // Methods is how the parsed config can be read
		return fmt.Errorf("gRPC kept %d method configs of %d", len(sc.Methods), len(raw.MethodConfig)) //nolint:staticcheck
	}
	for path, mc := range sc.Methods { //nolint:staticcheck
		if mc.Timeout == nil || *mc.Timeout <= 0 {
			return fmt.Errorf("%s: no timeout", path)
		}
		if rp := mc.RetryPolicy; rp != nil {
			if rp.MaxAttempts < 2 || rp.MaxAttempts > grpctarget.MaxAttempts {
				return fmt.Errorf("%s: maxAttempts %d outside [2, 5]", path, rp.MaxAttempts)
			}
			if rp.MaxBackoff < rp.InitialBackoff {
				return fmt.Errorf("%s: maxBackoff %v < initialBackoff %v", path, rp.MaxBackoff, rp.InitialBackoff)
			}
		}
	}
	// The retryThrottling fields gRPC reads: tokenRatio has 3 decimals.
	var th struct {
		RetryThrottling *struct{ MaxTokens, TokenRatio float64 } `json:"retryThrottling"`
	}
	if err := json.Unmarshal(body, &th); err != nil {
		return err
	}
	if t := th.RetryThrottling; t != nil {
		if t.TokenRatio*1000 != float64(int64(t.TokenRatio*1000+0.5)) {
			return fmt.Errorf("tokenRatio %v has more than 3 decimals", t.TokenRatio)
		}
	}
	return nil
}

// --- Istio: the API types, decoded by the jsonpb decoder Istio's
// generated UnmarshalJSON uses, but refusing unknown fields; then the CRD's
// rules (durations >= 1ms).

type k8sObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
}

func decodeK8s(doc []byte, apiVersion, kind string) (k8sObject, error) {
	var o k8sObject
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return o, err
	}
	if err := strictJSON(j, &o); err != nil {
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

func validateIstio(body []byte) error {
	docs := yamlDocs(body)
	if len(docs) != 2 {
		return fmt.Errorf("want a VirtualService and a DestinationRule, got %d documents", len(docs))
	}
	strict := &jsonpb.Unmarshaler{AllowUnknownFields: false}
	atLeastMs := func(what string, d *durationpb.Duration) error {
		if d != nil && d.AsDuration() < time.Millisecond {
			return fmt.Errorf("%s %v: Istio refuses less than 1ms", what, d.AsDuration())
		}
		return nil
	}
	o, err := decodeK8s(docs[0], "networking.istio.io/v1", "VirtualService")
	if err != nil {
		return fmt.Errorf("VirtualService: %w", err)
	}
	var vs networkingv1.VirtualService
	if err := strict.Unmarshal(bytes.NewReader(o.Spec), &vs); err != nil {
		return fmt.Errorf("VirtualService spec: %w", err)
	}
	if len(vs.GetHosts()) == 0 || len(vs.GetHttp()) == 0 {
		return errors.New("VirtualService without hosts or http routes")
	}
	for _, h := range vs.GetHttp() {
		if h.GetTimeout() == nil {
			return fmt.Errorf("route %q: no timeout", h.GetName())
		}
		if err := atLeastMs("timeout", h.GetTimeout()); err != nil {
			return err
		}
		for _, m := range h.GetMatch() {
			if re := m.GetUri().GetRegex(); re != "" {
				if _, err := regexp.Compile(re); err != nil {
					return fmt.Errorf("route %q: regex: %w", h.GetName(), err)
				}
			}
		}
		rt := h.GetRetries()
		if rt == nil {
			return fmt.Errorf("route %q: no retries: Istio would retry twice", h.GetName())
		}
		if rt.GetAttempts() < 0 {
			return fmt.Errorf("route %q: attempts %d", h.GetName(), rt.GetAttempts())
		}
		if rt.GetAttempts() > 0 {
			if rt.GetPerTryTimeout() == nil || rt.GetRetryOn() == "" {
				return fmt.Errorf("route %q: retries without perTryTimeout or retryOn", h.GetName())
			}
			for _, c := range strings.Split(rt.GetRetryOn(), ",") {
				if !istioRetryConditions[c] && !target.IsStatus(c) {
					return fmt.Errorf("route %q: retryOn %q", h.GetName(), c)
				}
			}
		}
		if err := atLeastMs("perTryTimeout", rt.GetPerTryTimeout()); err != nil {
			return err
		}
		if err := atLeastMs("backoff", rt.GetBackoff()); err != nil {
			return err
		}
	}
	o, err = decodeK8s(docs[1], "networking.istio.io/v1", "DestinationRule")
	if err != nil {
		return fmt.Errorf("DestinationRule: %w", err)
	}
	var dr networkingv1.DestinationRule
	if err := strict.Unmarshal(bytes.NewReader(o.Spec), &dr); err != nil {
		return fmt.Errorf("DestinationRule spec: %w", err)
	}
	if rb := dr.GetTrafficPolicy().GetRetryBudget(); rb != nil {
		if p := rb.GetPercent().GetValue(); p <= 0 || p > 100 {
			return fmt.Errorf("retryBudget.percent %v outside (0, 100]", p)
		}
	}
	cp := dr.GetTrafficPolicy().GetConnectionPool()
	if err := atLeastMs("connectTimeout", cp.GetTcp().GetConnectTimeout()); err != nil {
		return err
	}
	if cp.GetTcp().GetMaxConnections() < 0 || cp.GetHttp().GetHttp2MaxRequests() < 0 {
		return errors.New("negative connection pool limit")
	}
	return nil
}

// istioRetryConditions are the retryOn policies Istio accepts besides status
// codes (Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on).
var istioRetryConditions = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true, "connect-failure": true,
	"envoy-ratelimited": true, "retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true,
	"retriable-headers": true, "http3-post-connect-failure": true, "cancelled": true, "deadline-exceeded": true,
	"internal": true, "resource-exhausted": true, "unavailable": true,
}

// --- Gateway API: the v1 types, strictly, then the CRD's validation rules
// (patterns and CEL rules of gateway.networking.k8s.io_httproutes.yaml).

var (
	gatewayDuration  = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)
	gatewayPathChars = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)
	gatewayRuleName  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func validateGateway(body []byte) error {
	docs := yamlDocs(body)
	if len(docs) == 0 {
		return errors.New("no HTTPRoute")
	}
	for _, doc := range docs {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		var hr gatewayv1.HTTPRoute
		if err := strictJSON(j, &hr); err != nil {
			return fmt.Errorf("HTTPRoute: %w", err)
		}
		if hr.APIVersion != "gateway.networking.k8s.io/v1" || hr.Kind != "HTTPRoute" {
			return fmt.Errorf("got %s %s", hr.APIVersion, hr.Kind)
		}
		if errs := validation.IsDNS1123Subdomain(hr.Name); len(errs) > 0 {
			return fmt.Errorf("metadata.name %q: %s", hr.Name, errs[0])
		}
		rules := hr.Spec.Rules
		if len(rules) < 1 || len(rules) > 16 {
			return fmt.Errorf("%d rules: the CRD allows 1 to 16", len(rules))
		}
		names := map[string]bool{}
		for _, r := range rules {
			if r.Name != nil {
				n := string(*r.Name)
				if len(n) > 253 || !gatewayRuleName.MatchString(n) || names[n] {
					return fmt.Errorf("rule name %q: invalid or repeated", n)
				}
				names[n] = true
			}
			if len(r.Matches) > 64 {
				return fmt.Errorf("rule %v: %d matches", r.Name, len(r.Matches))
			}
			for _, m := range r.Matches {
				if err := gatewayCheckPath(m.Path); err != nil {
					return fmt.Errorf("rule %v: %w", r.Name, err)
				}
			}
			for _, b := range r.BackendRefs {
				if b.Port == nil {
					return fmt.Errorf("rule %v: backendRef to a Service without a port", r.Name)
				}
			}
			t := r.Timeouts
			if t == nil || t.Request == nil || t.BackendRequest == nil {
				return fmt.Errorf("rule %v: no timeouts", r.Name)
			}
			req, back := string(*t.Request), string(*t.BackendRequest)
			for _, d := range []string{req, back} {
				if !gatewayDuration.MatchString(d) {
					return fmt.Errorf("rule %v: duration %q does not match %s", r.Name, d, gatewayDuration)
				}
			}
			rd, _ := time.ParseDuration(req)
			bd, _ := time.ParseDuration(back)
			if rd != 0 && bd > rd {
				return fmt.Errorf("rule %v: backendRequest %s longer than request %s", r.Name, back, req)
			}
			if rt := r.Retry; rt != nil {
				// The v1.7.0 CRD (either channel): codes 400-599, attempts
				// >= 0 (kubebuilder:validation:Minimum:=0 in
				// apis/v1/httproute_types.go; 1 before v1.7.0), a Gateway
				// API duration. The module stays at v1.6.3, whose Go types
				// read the same fields: v1.7.0 needs Go 1.27.
				for _, c := range rt.Codes {
					if c < 400 || c > 599 {
						return fmt.Errorf("rule %v: retry code %d outside 400-599", r.Name, c)
					}
				}
				if rt.Attempts != nil && *rt.Attempts < 0 {
					return fmt.Errorf("rule %v: retry attempts %d below 0", r.Name, *rt.Attempts)
				}
				if rt.Backoff != nil && !gatewayDuration.MatchString(string(*rt.Backoff)) {
					return fmt.Errorf("rule %v: retry backoff %q", r.Name, *rt.Backoff)
				}
			}
		}
	}
	return nil
}

func gatewayCheckPath(p *gatewayv1.HTTPPathMatch) error {
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

// --- Linkerd: no Go module is served, so these structs mirror the
// ServiceProfile CRD (serviceprofiles.linkerd.io, v1alpha2) and the checks
// mirror linkerd's profiles.Validate: strict decoding, a DNS-1123 name,
// routes with a name and a condition that sets a field, Go durations, and a
// retry budget with all three fields.

type lkServiceProfile struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Routes       []lkRoute        `json:"routes"`
		RetryBudget  *lkRetryBudget   `json:"retryBudget,omitempty"`
		DstOverrides []map[string]any `json:"dstOverrides,omitempty"`
		OpaquePorts  []string         `json:"opaquePorts,omitempty"`
	} `json:"spec"`
}

type lkRoute struct {
	Name            *string          `json:"name"`
	Condition       *lkRequestMatch  `json:"condition"`
	ResponseClasses []map[string]any `json:"responseClasses,omitempty"`
	IsRetryable     bool             `json:"isRetryable,omitempty"`
	Timeout         string           `json:"timeout,omitempty"`
}

type lkRequestMatch struct {
	All       []*lkRequestMatch `json:"all,omitempty"`
	Not       *lkRequestMatch   `json:"not,omitempty"`
	Any       []*lkRequestMatch `json:"any,omitempty"`
	PathRegex string            `json:"pathRegex,omitempty"`
	Method    string            `json:"method,omitempty"`
}

type lkRetryBudget struct {
	RetryRatio          *float32 `json:"retryRatio"`
	MinRetriesPerSecond *uint32  `json:"minRetriesPerSecond"`
	TTL                 *string  `json:"ttl"`
}

// validateLinkerd reads each document of the Linkerd snippet: HTTPRoutes
// (policy.linkerd.io/v1beta3, whose spec is Gateway API's HTTPRoute spec)
// and GRPCRoutes through the Gateway API types, strictly, with Linkerd's
// annotations checked as its policy controller reads them; a
// ServiceProfile through the mirror of its CRD.
func validateLinkerd(body []byte) error {
	docs := yamlDocs(body)
	if len(docs) == 0 {
		return errors.New("no document")
	}
	for _, doc := range docs {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return err
		}
		var err error
		switch head.Kind {
		case "ServiceProfile":
			err = validateServiceProfile(doc)
		case "HTTPRoute", "GRPCRoute":
			err = validateLinkerdRoute(doc, head.Kind)
		default:
			err = fmt.Errorf("unexpected kind %q", head.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var (
	linkerdDuration       = regexp.MustCompile(`^[0-9]+(ms|s)$`)
	linkerdHTTPConditions = regexp.MustCompile(`^(5xx|gateway-error|[1-5][0-9][0-9](-[1-5][0-9][0-9])?)(,(5xx|gateway-error|[1-5][0-9][0-9](-[1-5][0-9][0-9])?))*$`)
	linkerdGRPCConditions = regexp.MustCompile(`^(cancelled|deadline-exceeded|internal|resource-exhausted|unavailable)(,(cancelled|deadline-exceeded|internal|resource-exhausted|unavailable))*$`)
)

func validateLinkerdRoute(doc []byte, kind string) error {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	var meta metav1.ObjectMeta
	var parents []gatewayv1.ParentReference
	switch kind {
	case "HTTPRoute":
		var hr gatewayv1.HTTPRoute
		if err := strictJSON(j, &hr); err != nil {
			return fmt.Errorf("HTTPRoute: %w", err)
		}
		if hr.APIVersion != "policy.linkerd.io/v1beta3" {
			return fmt.Errorf("HTTPRoute apiVersion %q", hr.APIVersion)
		}
		meta, parents = hr.ObjectMeta, hr.Spec.ParentRefs
		if len(hr.Spec.Rules) == 0 {
			return errors.New("HTTPRoute without rules")
		}
		for _, r := range hr.Spec.Rules {
			for _, m := range r.Matches {
				if err := gatewayCheckPath(m.Path); err != nil {
					return err
				}
			}
		}
	default:
		var gr gatewayv1.GRPCRoute
		if err := strictJSON(j, &gr); err != nil {
			return fmt.Errorf("GRPCRoute: %w", err)
		}
		if gr.APIVersion != "gateway.networking.k8s.io/v1" {
			return fmt.Errorf("GRPCRoute apiVersion %q", gr.APIVersion)
		}
		meta, parents = gr.ObjectMeta, gr.Spec.ParentRefs
	}
	if errs := validation.IsDNS1123Subdomain(meta.Name); len(errs) > 0 {
		return fmt.Errorf("metadata.name %q: %s", meta.Name, errs[0])
	}
	// Linkerd attaches a route to a Service only when the parent says so:
	// the CRD's defaults are a Gateway.
	if len(parents) != 1 || parents[0].Group == nil || *parents[0].Group != "" || parents[0].Kind == nil || *parents[0].Kind != "Service" {
		return fmt.Errorf("route %s: parentRefs must name one Service (group \"\", kind Service)", meta.Name)
	}
	for k, v := range meta.Annotations {
		switch k {
		case "timeout.linkerd.io/request", "timeout.linkerd.io/response", "retry.linkerd.io/timeout":
			if d, err := time.ParseDuration(v); err != nil || d <= 0 || !linkerdDuration.MatchString(v) {
				return fmt.Errorf("route %s: %s %q is not a duration", meta.Name, k, v)
			}
		case "retry.linkerd.io/limit":
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return fmt.Errorf("route %s: %s %q", meta.Name, k, v)
			}
		case "retry.linkerd.io/http":
			if kind != "HTTPRoute" || !linkerdHTTPConditions.MatchString(v) {
				return fmt.Errorf("route %s: %s %q", meta.Name, k, v)
			}
		case "retry.linkerd.io/grpc":
			if !linkerdGRPCConditions.MatchString(v) {
				return fmt.Errorf("route %s: %s %q", meta.Name, k, v)
			}
		default:
			return fmt.Errorf("route %s: unknown annotation %q", meta.Name, k)
		}
	}
	_, http := meta.Annotations["retry.linkerd.io/http"]
	_, grpc := meta.Annotations["retry.linkerd.io/grpc"]
	_, perTry := meta.Annotations["retry.linkerd.io/timeout"]
	if _, limit := meta.Annotations["retry.linkerd.io/limit"]; limit && !http && !grpc && !perTry {
		return fmt.Errorf("route %s: a retry limit with nothing to retry on", meta.Name)
	}
	return nil
}

func validateServiceProfile(body []byte) error {
	var sp lkServiceProfile
	if err := yaml.UnmarshalStrict(body, &sp); err != nil {
		return fmt.Errorf("ServiceProfile: %w", err)
	}
	if sp.APIVersion != "linkerd.io/v1alpha2" || sp.Kind != "ServiceProfile" {
		return fmt.Errorf("got %s %s", sp.APIVersion, sp.Kind)
	}
	if errs := validation.IsDNS1123Subdomain(sp.Metadata.Name); len(errs) > 0 {
		return fmt.Errorf("name %q: %s", sp.Metadata.Name, errs[0])
	}
	if len(sp.Spec.Routes) == 0 {
		return errors.New("no routes")
	}
	for _, r := range sp.Spec.Routes {
		if r.Name == nil || *r.Name == "" {
			return errors.New("a route without a name")
		}
		if r.Condition == nil || (r.Condition.Method == "" && r.Condition.PathRegex == "" && r.Condition.All == nil && r.Condition.Any == nil && r.Condition.Not == nil) {
			return fmt.Errorf("route %q: a condition must set a field", *r.Name)
		}
		if r.Condition.PathRegex != "" {
			if _, err := regexp.Compile("^" + r.Condition.PathRegex + "$"); err != nil {
				return fmt.Errorf("route %q: pathRegex: %w", *r.Name, err)
			}
		}
		if r.Timeout != "" {
			if d, err := time.ParseDuration(r.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("route %q: timeout %q", *r.Name, r.Timeout)
			}
		}
	}
	if b := sp.Spec.RetryBudget; b != nil {
		if b.RetryRatio == nil || b.MinRetriesPerSecond == nil || b.TTL == nil {
			return errors.New("retryBudget needs retryRatio, minRetriesPerSecond and ttl")
		}
		if *b.RetryRatio < 0 {
			return fmt.Errorf("retryRatio %v", *b.RetryRatio)
		}
		if _, err := time.ParseDuration(*b.TTL); err != nil {
			return fmt.Errorf("ttl: %w", err)
		}
	}
	return nil
}

// --- resilience4j: no Go parser; the structs mirror the Spring Boot
// properties the snippet uses and the checks mirror resilience4j's builders
// (Spring's single-unit durations, randomizedWaitFactor in [0, 1)).

type r4jConfig struct {
	Resilience4j struct {
		Timelimiter struct {
			Instances map[string]struct {
				TimeoutDuration     string `json:"timeoutDuration"`
				CancelRunningFuture bool   `json:"cancelRunningFuture"`
			} `json:"instances"`
		} `json:"timelimiter"`
		Bulkhead *struct {
			Instances map[string]struct {
				MaxConcurrentCalls int    `json:"maxConcurrentCalls"`
				MaxWaitDuration    string `json:"maxWaitDuration"`
			} `json:"instances"`
		} `json:"bulkhead"`
		Retry *struct {
			Instances map[string]struct {
				MaxAttempts                  int      `json:"maxAttempts"`
				WaitDuration                 string   `json:"waitDuration"`
				EnableExponentialBackoff     bool     `json:"enableExponentialBackoff"`
				ExponentialBackoffMultiplier float64  `json:"exponentialBackoffMultiplier"`
				ExponentialMaxWaitDuration   string   `json:"exponentialMaxWaitDuration"`
				EnableRandomizedWait         bool     `json:"enableRandomizedWait"`
				RandomizedWaitFactor         float64  `json:"randomizedWaitFactor"`
				RetryExceptions              []string `json:"retryExceptions"`
			} `json:"instances"`
		} `json:"retry"`
	} `json:"resilience4j"`
}

var (
	springDuration = regexp.MustCompile(`^[0-9]+(ns|us|ms|s|m|h|d)$`)
	javaClass      = regexp.MustCompile(`^([a-z][a-z0-9_]*\.)+[A-Z][A-Za-z0-9_$]*$`)
)

func validateResilience4j(body []byte) error {
	var c r4jConfig
	if err := yaml.UnmarshalStrict(body, &c); err != nil {
		return err
	}
	r := c.Resilience4j
	if len(r.Timelimiter.Instances) == 0 {
		return errors.New("no timelimiter instance")
	}
	dur := func(what, s string) error {
		if !springDuration.MatchString(s) || s[0] == '0' && s != "0ms" {
			return fmt.Errorf("%s %q is not a Spring duration", what, s)
		}
		return nil
	}
	for n, tl := range r.Timelimiter.Instances {
		if err := dur(n+".timeoutDuration", tl.TimeoutDuration); err != nil {
			return err
		}
	}
	if r.Bulkhead != nil {
		for n, b := range r.Bulkhead.Instances {
			if b.MaxConcurrentCalls < 1 {
				return fmt.Errorf("%s.maxConcurrentCalls %d", n, b.MaxConcurrentCalls)
			}
			if err := dur(n+".maxWaitDuration", b.MaxWaitDuration); err != nil {
				return err
			}
		}
	}
	if r.Retry != nil {
		for n, rt := range r.Retry.Instances {
			if rt.MaxAttempts == 1 && rt.WaitDuration == "" && rt.RetryExceptions == nil && !rt.EnableExponentialBackoff && !rt.EnableRandomizedWait {
				continue // one attempt: nothing is retried, nothing else matters
			}
			if rt.MaxAttempts < 1 || rt.ExponentialBackoffMultiplier <= 1 || rt.RandomizedWaitFactor < 0 || rt.RandomizedWaitFactor >= 1 {
				return fmt.Errorf("retry %s: %+v", n, rt)
			}
			if err := dur(n+".waitDuration", rt.WaitDuration); err != nil {
				return err
			}
			if err := dur(n+".exponentialMaxWaitDuration", rt.ExponentialMaxWaitDuration); err != nil {
				return err
			}
			// Without retryExceptions resilience4j retries every exception.
			if len(rt.RetryExceptions) == 0 {
				return fmt.Errorf("retry %s: no retryExceptions: every exception would be retried", n)
			}
			for _, e := range rt.RetryExceptions {
				if !javaClass.MatchString(e) {
					return fmt.Errorf("retry %s: %q is not a Java class name", n, e)
				}
			}
		}
	}
	return nil
}

// --- Tools: go vet, python3, nginx, HAProxy.

// requireTool returns the path of a binary, or skips the test (fails it
// under TUNETIMEOUT_E2E=1, as in .ci/run) when it is missing.
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	return e2etest.RequireBinary(t, name, install)
}

func runTool(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// validateGo checks that Go snippets are gofmt-clean and pass go vet (which
// type-checks them), each as a package of one module: one go vet for all.
func validateGo(t *testing.T, bodies ...[]byte) error {
	goTool := requireTool(t, "go", "the Go toolchain")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module snippetcheck\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	for i, body := range bodies {
		if formatted, err := format.Source(body); err != nil || !bytes.Equal(formatted, body) {
			return fmt.Errorf("gofmt would change Go snippet %d (%v)", i, err)
		}
		pkg := filepath.Join(dir, fmt.Sprintf("p%d", i))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pkg, "client.go"), body, 0o644); err != nil {
			return err
		}
	}
	return runTool(dir, goTool, "vet", "./...")
}

// validatePython compiles Python snippets with py_compile, all at once.
func validatePython(t *testing.T, bodies ...[]byte) error {
	// Not an end-to-end binary: missing, the check skips even under
	// TUNETIMEOUT_E2E=1. The system python3 starts faster than a pyenv shim.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed: the httpx snippet is not compiled (apt-get install -y python3)")
		}
	}
	dir := t.TempDir()
	args := []string{"-m", "py_compile"}
	for i, body := range bodies {
		f := filepath.Join(dir, fmt.Sprintf("httpx_snippet_%d.py", i))
		if err := os.WriteFile(f, body, 0o644); err != nil {
			return err
		}
		args = append(args, f)
	}
	return runTool(dir, py, args...)
}

// upstreamServer is the server line of the snippets: the test points it at
// an address, because nginx and HAProxy resolve names when they check.
var upstreamServer = regexp.MustCompile(`(?m)^(\s*server\s+(?:\S+\s+)?)[^\s:]+:80\b`)

func validateNginx(t *testing.T, body []byte) error {
	nginx := requireTool(t, "nginx", "apt-get install -y nginx haproxy")
	dir := t.TempDir()
	snippet := upstreamServer.ReplaceAll(body, []byte("${1}127.0.0.1:80"))
	if err := os.WriteFile(filepath.Join(dir, "snippet.conf"), snippet, 0o644); err != nil {
		return err
	}
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/snippet.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	return runTool(dir, nginx, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf"))
}

func validateHAProxy(t *testing.T, body []byte) error {
	haproxy := requireTool(t, "haproxy", "apt-get install -y nginx haproxy")
	dir := t.TempDir()
	// A frontend so that the configuration would start: the snippet's
	// commented use_backend lines, and its first backend as the default.
	fe := "frontend check\n    mode http\n    bind 127.0.0.1:18080\n    timeout client 10s\n"
	hasDefault := false
	for _, m := range regexp.MustCompile(`(?m)^#   ((?:use|default)_backend .*)$`).FindAllSubmatch(body, -1) {
		fe += "    " + string(m[1]) + "\n"
		hasDefault = hasDefault || bytes.HasPrefix(m[1], []byte("default_backend"))
	}
	if first := regexp.MustCompile(`(?m)^backend (\S+)`).FindSubmatch(body); first != nil && !hasDefault {
		fe += "    default_backend " + string(first[1]) + "\n"
	}
	cfg := "global\n    log stderr format raw local0\n\n" + fe + "\n" + string(upstreamServer.ReplaceAll(body, []byte("${1}127.0.0.1:80")))
	f := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(f, []byte(cfg), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(haproxy, "-c", "-f", f).CombinedOutput()
	if err != nil {
		return fmt.Errorf("haproxy -c: %w\n%s\n%s", err, out, cfg)
	}
	if bytes.Contains(out, []byte("[WARNING]")) || bytes.Contains(out, []byte("[ALERT]")) {
		return fmt.Errorf("haproxy -c warns:\n%s\n%s", out, cfg)
	}
	return nil
}
