package istio_test

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder Istio's own types use
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/istio"
	"google.golang.org/protobuf/types/known/durationpb"
	networkingv1 "istio.io/api/networking/v1"
)

// TestSnippets: istio's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, istio.Target, targettest.Checks{
		Validate:     targettest.Each(validateIstio),
		Behaviours:   readIstio,
		NoRetryAfter: true,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 2, HangWait: time.Second, FailSuccess: 0.99,
			Why: "Istio's VirtualService is Envoy's route"},
		Refuses: []targettest.Mistake{
			{Name: "istio sub-millisecond timeout", From: "perTryTimeout: 800ms", To: "perTryTimeout: 500us"},
			{Name: "istio unknown field", From: "perTryTimeout: 800ms", To: "perTryTimout: 800ms"},
			{Name: "istio bad retryOn", From: "connect-failure,reset,408,503", To: "connect-failure,timeout"},
		},
	})
}

func validateIstio(body []byte) error {
	docs := targettest.YAMLDocs(body)
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
	o, err := targettest.DecodeK8s(docs[0], "networking.istio.io/v1", "VirtualService")
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
				if !targettest.RetryConditions[c] && !target.IsStatus(c) {
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
	o, err = targettest.DecodeK8s(docs[1], "networking.istio.io/v1", "DestinationRule")
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

func readIstio(body []byte) ([]targettest.Behaviour, error) {
	docs := targettest.YAMLDocs(body)
	o, err := targettest.DecodeK8s(docs[0], "networking.istio.io/v1", "VirtualService")
	if err != nil {
		return nil, err
	}
	var vs networkingv1.VirtualService
	if err := (&jsonpb.Unmarshaler{}).Unmarshal(strings.NewReader(string(o.Spec)), &vs); err != nil {
		return nil, err
	}
	var out []targettest.Behaviour
	for _, h := range vs.GetHttp() {
		b := targettest.Behaviour{Name: h.GetName(), Bound: h.GetTimeout().AsDuration(), Attempts: 1, CatchAll: len(h.GetMatch()) == 0}
		b.Worst, b.PerTry = b.Bound, b.Bound
		rt := h.GetRetries()
		if rt == nil {
			// Istio's default: 2 retries on connect-failure, refused-stream,
			// unavailable, cancelled (pilot's route/retry/retry.go).
			b.Attempts, b.RetrySent, b.RetryNeverSent = 3, true, true
		} else if rt.GetAttempts() > 0 {
			b.Attempts = 1 + int(rt.GetAttempts())
			b.PerTry = rt.GetPerTryTimeout().AsDuration()
			b.Base = rt.GetBackoff().AsDuration()
			b.Cap = 10 * b.Base
			for _, cond := range strings.Split(rt.GetRetryOn(), ",") {
				switch {
				case targettest.NeverSentConds[cond]:
					b.RetryNeverSent = true
				case target.IsStatus(cond):
					b.RetrySent = true
					b.Statuses = append(b.Statuses, cond)
				case cond == "reset":
					b.RetrySent, b.Timeouts, b.RetryNeverSent = true, true, true
				default:
					b.RetrySent = true
				}
			}
		}
		out = append(out, b)
	}
	return out, nil
}
