package snippet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// grpcTarget writes a gRPC service config (JSON, for
// grpc.WithDefaultServiceConfig or a resolver): one methodConfig per group
// with its deadline and retryPolicy, and retryThrottling from the retry
// budget. JSON has no comments: the header is printed beside it.
var grpcTarget = Target{
	Name:    "grpc",
	File:    "grpc.json",
	Summary: "gRPC service config: methodConfig timeout and retryPolicy, retryThrottling",
	render:  renderGRPC,
}

// gRPC clamps maxAttempts to 5 unless the channel raises the limit
// (grpc-go: WithMaxCallAttempts); the service config says 5 then.
const grpcMaxAttempts = 5

type grpcConfig struct {
	MethodConfig    []grpcMethodConfig `json:"methodConfig"`
	RetryThrottling *grpcThrottling    `json:"retryThrottling,omitempty"`
}

type grpcMethodConfig struct {
	Name        []grpcName       `json:"name"`
	Timeout     string           `json:"timeout"`
	RetryPolicy *grpcRetryPolicy `json:"retryPolicy,omitempty"`
}

type grpcName struct {
	Service string `json:"service"`
	Method  string `json:"method,omitempty"`
}

type grpcRetryPolicy struct {
	MaxAttempts          int      `json:"maxAttempts"`
	InitialBackoff       string   `json:"initialBackoff"`
	MaxBackoff           string   `json:"maxBackoff"`
	BackoffMultiplier    float64  `json:"backoffMultiplier"`
	RetryableStatusCodes []string `json:"retryableStatusCodes"`
}

type grpcThrottling struct {
	MaxTokens  float64 `json:"maxTokens"`
	TokenRatio float64 `json:"tokenRatio"`
}

func renderGRPC(p *plan, d *doc) error {
	svc := grpcFullName(p.service)
	d.note("gRPC service config for service %q, written by tunetimeout from measured latency.", svc)
	d.note("timeout is the deadline of the whole call, every attempt and backoff included; gRPC has no per-try timeout.")
	var cfg grpcConfig
	seen := map[string]bool{}
	for _, rt := range p.routes {
		n := grpcName{Service: svc}
		switch {
		case rt.match.catchAll && !rt.match.notPath:
		case grpcMethodPath(rt.group) != nil:
			n = *grpcMethodPath(rt.group)
		default:
			n.Method = identifier(rt.group, true)
		}
		// gRPC refuses a service config that names a method twice.
		if seen[n.Service+"/"+n.Method] {
			if n.Method == "" {
				n.Method = identifier(rt.group, true)
			}
			base := n.Method
			for i := 2; seen[n.Service+"/"+n.Method]; i++ {
				n.Method = fmt.Sprintf("%s_%d", base, i)
			}
		}
		seen[n.Service+"/"+n.Method] = true
		mc := grpcMethodConfig{Name: []grpcName{n}, Timeout: protoDur(rt.timeout)}
		label := n.Service + "/" + n.Method
		if n.Method == "" {
			label = n.Service + " (every method)"
		}
		d.note("%s, group %q:", label, rt.group)
		d.note("  timeout %s: %s", mc.Timeout, rt.timeoutWhy)
		if rt.attempts > 1 {
			rp := &grpcRetryPolicy{
				MaxAttempts:          min(rt.attempts, grpcMaxAttempts),
				InitialBackoff:       protoDur(rt.backoffBase),
				MaxBackoff:           protoDur(rt.backoffCap),
				BackoffMultiplier:    2,
				RetryableStatusCodes: grpcCodes(rt.retryOn),
			}
			mc.RetryPolicy = rp
			d.note("  maxAttempts %d: %s", rp.MaxAttempts, rt.attemptsWhy)
			if rt.attempts > grpcMaxAttempts {
				d.note("  gRPC treats maxAttempts above 5 as 5 (unless the channel raises it): %d attempts clamped to 5", rt.attempts)
			}
			d.note("  per-try timeout %s cannot be written: %s", protoDur(rt.perTry), rt.perTryWhy)
			d.note("  initialBackoff %s, maxBackoff %s, multiplier 2: %s; gRPC's backoff is full jitter", rp.InitialBackoff, rp.MaxBackoff, rt.backoffWhy)
			d.note("  retryableStatusCodes %s from %s", strings.Join(rp.RetryableStatusCodes, ", "), strings.Join(rt.retryOn, ", "))
		} else {
			d.note("  no retryPolicy (gRPC needs maxAttempts >= 2): %s", rt.attemptsWhy)
		}
		cfg.MethodConfig = append(cfg.MethodConfig, mc)
	}
	if b := p.budget; b != nil {
		tr := math.Max(0.001, math.Round(*b*1000)/1000)
		cfg.RetryThrottling = &grpcThrottling{MaxTokens: 10, TokenRatio: tr}
		d.note("retryThrottling: tokenRatio %s = %s (each success earns it, each failure costs 1); maxTokens 10 stops retries after about 5 failures in a row", ratio(tr), p.budgetWhy)
	}
	if p.connect != nil {
		d.note("connect timeout %s is not part of a service config: dial with grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: ...})", protoDur(*p.connect))
	}
	if p.bulkhead != nil {
		d.note("bulkhead %s: gRPC has no client-side limit of calls in flight; use a semaphore or an interceptor", p.bulkheadWhy)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return err
	}
	d.body.Write(b.Bytes())
	return nil
}

// grpcMethodPath reads a group that is a gRPC method path,
// "/package.Service/Method".
func grpcMethodPath(group string) *grpcName {
	parts := strings.Split(group, "/")
	if len(parts) != 3 || parts[0] != "" || parts[1] == "" || parts[2] == "" {
		return nil
	}
	if grpcFullName(parts[1]) != parts[1] || identifier(parts[2], false) != parts[2] {
		return nil
	}
	return &grpcName{Service: parts[1], Method: parts[2]}
}

// grpcFullName is a protobuf full name: identifiers joined by dots.
func grpcFullName(s string) string {
	var parts []string
	for _, p := range strings.Split(s, ".") {
		if p != "" {
			parts = append(parts, identifier(p, false))
		}
	}
	if len(parts) == 0 {
		return DefaultService
	}
	return strings.Join(parts, ".")
}

// grpcCodes maps retry conditions to gRPC status codes, following gRPC's
// HTTP-to-gRPC mapping: a connect failure, 429, 502, 503 and 504 are
// UNAVAILABLE; 429 is also RESOURCE_EXHAUSTED, gRPC's own "slow down".
// UNAVAILABLE is always in the list, which may not be empty.
func grpcCodes(on []string) []string {
	codes := []string{"UNAVAILABLE"}
	for _, o := range on {
		if strings.TrimSpace(o) == "429" {
			codes = append(codes, "RESOURCE_EXHAUSTED")
			break
		}
	}
	return codes
}
