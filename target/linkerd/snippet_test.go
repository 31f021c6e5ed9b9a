package linkerd_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// TestSnippets: linkerd's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, linkerd.Target, targettest.Checks{
		Validate:     targettest.Each(validateLinkerd),
		Behaviours:   readLinkerd,
		NoRetryAfter: true,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 2, HangWait: time.Second, FailSuccess: 0.8,
			Why: "retry.linkerd.io/timeout ends and retries an attempt, timeout.linkerd.io/request the call; Linkerd retries answers' status codes, not refused connections"},
		Refuses: []targettest.Mistake{
			{Name: "linkerd bad timeout", From: `timeout.linkerd.io/request: "1s"`, To: `timeout.linkerd.io/request: "1"`},
			{Name: "linkerd unknown annotation", From: "retry.linkerd.io/limit:", To: "retry.linkerd.io/limits:"},
			{Name: "linkerd parent is a Gateway", From: "    kind: Service\n", To: "    kind: Gateway\n"},
			{Name: "linkerd bad condition", From: `retry.linkerd.io/http: "408,503"`, To: `retry.linkerd.io/http: "408,timeout"`},
			{Name: "linkerd unknown field", From: "    backendRefs:", To: "    backendRef:"},
			{Name: "serviceprofile missing ttl", From: "    ttl: 10s\n", To: "", Linkerd: target.LinkerdServiceProfile},
			{Name: "serviceprofile bad timeout", From: "timeout: 1s", To: "timeout: 1", Linkerd: target.LinkerdServiceProfile},
			{Name: "serviceprofile unknown field", From: "isRetryable: false", To: "retryable: false", Linkerd: target.LinkerdServiceProfile},
		},
	})
}

// validateLinkerd reads each document of the Linkerd snippet: HTTPRoutes
// (policy.linkerd.io/v1beta3, whose spec is Gateway API's HTTPRoute spec)
// and GRPCRoutes through the Gateway API types, strictly, with Linkerd's
// annotations checked as its policy controller reads them; a
// ServiceProfile through the mirror of its CRD.
func validateLinkerd(body []byte) error {
	docs := targettest.YAMLDocs(body)
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
		if err := targettest.StrictJSON(j, &hr); err != nil {
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
				if err := targettest.GatewayCheckPath(m.Path); err != nil {
					return err
				}
			}
		}
	default:
		var gr gatewayv1.GRPCRoute
		if err := targettest.StrictJSON(j, &gr); err != nil {
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

func readLinkerd(body []byte) ([]targettest.Behaviour, error) {
	var out []targettest.Behaviour
	for _, doc := range targettest.YAMLDocs(body) {
		var head struct {
			Kind     string
			Metadata struct {
				Name        string
				Annotations map[string]string
			}
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, err
		}
		if head.Kind == "ServiceProfile" {
			var sp lkServiceProfile
			if err := yaml.Unmarshal(doc, &sp); err != nil {
				return nil, err
			}
			for _, r := range sp.Spec.Routes {
				t, _ := time.ParseDuration(r.Timeout)
				// A retryable route is retried on 5xx while the budget lasts;
				// its timeout covers the retries.
				out = append(out, targettest.Behaviour{Name: *r.Name, Bound: t, Worst: t, PerTry: t, Attempts: 1, RetrySent: r.IsRetryable, CatchAll: r.Condition.PathRegex == "/.*"})
			}
			continue
		}
		a := head.Metadata.Annotations
		t, _ := time.ParseDuration(a["timeout.linkerd.io/request"])
		b := targettest.Behaviour{Name: head.Metadata.Name, Bound: t, Worst: t, PerTry: t, Attempts: 1, CatchAll: strings.HasSuffix(head.Metadata.Name, "-all")}
		if l, ok := a["retry.linkerd.io/limit"]; ok {
			n, _ := strconv.Atoi(l)
			b.Attempts, b.RetrySent = n+1, true
			b.Base, b.Cap = 25*time.Millisecond, 250*time.Millisecond // fixed in Linkerd
			if pt, ok := a["retry.linkerd.io/timeout"]; ok {
				b.PerTry, _ = time.ParseDuration(pt)
				b.Timeouts = true
			}
			if s := a["retry.linkerd.io/http"]; s != "" {
				b.Statuses = strings.Split(s, ",")
			}
		}
		out = append(out, b)
	}
	return out, nil
}
