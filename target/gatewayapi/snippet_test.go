package gatewayapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gatewayapi"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// TestSnippets: gateway-api's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, gatewayapi.Target, targettest.Checks{
		Validate:     targettest.Each(validateGateway),
		Behaviours:   readGateway,
		NoRetryAfter: true,
		Simulation: targettest.Simulation{Opts: target.Options{GatewayAPIChannel: target.GatewayExperimental}, HangAttempts: 2, HangWait: time.Second, FailSuccess: 0.8,
			Why: "an attempt that reaches backendRequest is retried within request (GEP-1731); retry codes are the backend's answers, so a refused connection is not retried"},
		Refuses: []targettest.Mistake{
			{Name: "gateway decimal duration", From: "request: 1s", To: "request: 0.5s"},
			{Name: "gateway backendRequest > request", From: "backendRequest: 351ms", To: "backendRequest: 9s"},
			{Name: "gateway path character", From: "value: /api/orders", To: `value: "/api/or ders"`},
			{Name: "gateway unknown field", From: "    timeouts:\n", To: "    timeout:\n"},
		},
	})
}

// --- Gateway API: the v1 types, strictly, then the CRD's validation rules
// (patterns and CEL rules of gateway.networking.k8s.io_httproutes.yaml).

var (
	gatewayRuleName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func validateGateway(body []byte) error {
	docs := targettest.YAMLDocs(body)
	if len(docs) == 0 {
		return errors.New("no HTTPRoute")
	}
	for _, doc := range docs {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		var hr gatewayv1.HTTPRoute
		if err := targettest.StrictJSON(j, &hr); err != nil {
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
				if err := targettest.GatewayCheckPath(m.Path); err != nil {
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
				if !targettest.GatewayDuration.MatchString(d) {
					return fmt.Errorf("rule %v: duration %q does not match %s", r.Name, d, targettest.GatewayDuration)
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
				if rt.Backoff != nil && !targettest.GatewayDuration.MatchString(string(*rt.Backoff)) {
					return fmt.Errorf("rule %v: retry backoff %q", r.Name, *rt.Backoff)
				}
			}
		}
	}
	return nil
}

func readGateway(body []byte) ([]targettest.Behaviour, error) {
	var out []targettest.Behaviour
	for _, doc := range targettest.YAMLDocs(body) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		var hr gatewayv1.HTTPRoute
		if err := json.Unmarshal(j, &hr); err != nil {
			return nil, err
		}
		for _, r := range hr.Spec.Rules {
			req, _ := time.ParseDuration(string(*r.Timeouts.Request))
			back, _ := time.ParseDuration(string(*r.Timeouts.BackendRequest))
			b := targettest.Behaviour{Name: string(*r.Name), Bound: req, Worst: req, PerTry: back, Attempts: 1}
			b.CatchAll = len(r.Matches) == 1 && r.Matches[0].Path != nil && *r.Matches[0].Path.Value == "/" && r.Matches[0].Method == nil
			if rt := r.Retry; rt != nil && *rt.Attempts > 0 {
				// GEP-1731: attempts counts the retries (0 disables them,
				// v1.7.0); an attempt that reaches backendRequest is
				// retried; the whole stays within request.
				b.Attempts, b.RetrySent, b.Timeouts = 1+*rt.Attempts, true, true
				b.Base, _ = time.ParseDuration(string(*rt.Backoff))
				for _, c := range rt.Codes {
					b.Statuses = append(b.Statuses, strconv.Itoa(int(c)))
				}
			}
			out = append(out, b)
		}
	}
	return out, nil
}
