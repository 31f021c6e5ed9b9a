// Package grpc is the config target of gRPC: a service config (method configs with timeout and retry
// policy) per report, and its reading for check.
package grpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes a gRPC service config (JSON, for
// grpc.WithDefaultServiceConfig or a resolver): one methodConfig per group
// with its deadline and retryPolicy, and retryThrottling from the retry
// budget. JSON has no comments: the header is printed beside it.
var Target = target.Target{
	Name:       "grpc",
	File:       "grpc.json",
	Summary:    "gRPC service config: methodConfig timeout and retryPolicy, retryThrottling",
	Language:   "json",
	Write:      renderGRPC,
	Reader:     ReadConfig,
	Detect:     Detect,
	Naming:     naming,
	Duration:   target.ProtoDur,
	Precedence: target.MethodRank,
}

// gRPC clamps maxAttempts to 5 unless the channel raises the limit
// (grpc-go: WithMaxCallAttempts); the service config says 5 then.
const MaxAttempts = 5

type Config struct {
	MethodConfig    []grpcMethodConfig `json:"methodConfig"`
	RetryThrottling *grpcThrottling    `json:"retryThrottling,omitempty"`
}

type grpcMethodConfig struct {
	Name          []target.GRPCName  `json:"name"`
	Timeout       string             `json:"timeout"`
	RetryPolicy   *grpcRetryPolicy   `json:"retryPolicy,omitempty"`
	HedgingPolicy *grpcHedgingPolicy `json:"hedgingPolicy,omitempty"`
}

type grpcRetryPolicy struct {
	MaxAttempts          int      `json:"maxAttempts"`
	InitialBackoff       string   `json:"initialBackoff"`
	MaxBackoff           string   `json:"maxBackoff"`
	BackoffMultiplier    float64  `json:"backoffMultiplier"`
	RetryableStatusCodes []string `json:"retryableStatusCodes"`
}

// grpcHedgingPolicy is gRFC A6's hedging: maxAttempts requests, hedgingDelay
// apart, until one answers; a nonFatalStatusCodes answer sends the next at
// once. It excludes retryPolicy in one method config.
type grpcHedgingPolicy struct {
	MaxAttempts         int      `json:"maxAttempts"`
	HedgingDelay        string   `json:"hedgingDelay"`
	NonFatalStatusCodes []string `json:"nonFatalStatusCodes,omitempty"`
}

type grpcThrottling struct {
	MaxTokens  float64 `json:"maxTokens"`
	TokenRatio float64 `json:"tokenRatio"`
}

func renderGRPC(p *target.Plan, d *target.Doc) error {
	svc := target.GrpcFullName(p.Service)
	d.Note("gRPC service config for service %q, written by tunetimeout from measured latency.", svc)
	d.Note("timeout is the deadline of the whole call, every attempt and backoff included; gRPC has no per-try timeout, so a slow attempt is not cut and retried: only failures that answer are.")
	d.Note("gRPC retries transparently, whatever this config says, the RPCs that never left the client or that the server refused before its application saw them (gRFC A6).")
	// The deadline crosses each hop as grpc-timeout (PROTOCOL-HTTP2.md); a
	// service config's timeout is the most a call waits, the context's
	// deadline applying when it is sooner (service_config.proto, timeout).
	d.Note("The deadline is passed down natively: a call's deadline goes out as grpc-timeout, the server's context carries it, and a call made with that context gets what is left (timeout here applies only when it is shorter). gRPC sends a call however little is left: drop one with less than a useful try in the handler, before calling (ctx.Deadline()).")
	p.NoteUnroutable(d, "a gRPC method name")
	var cfg Config
	seen := map[string]bool{}
	next := map[string]int{} // the next number to try after a method name
	for _, rt := range p.PathRoutes() {
		n := target.GRPCName{Service: svc}
		switch {
		case rt.Match.CatchAll && !rt.Match.NotPath:
		default:
			n = grpcObjectName(svc, rt.Group)
		}
		if rt.Synthetic && seen[n.Service+"/"] {
			continue // a group already configures every method of the service
		}
		// gRPC refuses a service config that names a method twice.
		if seen[n.Service+"/"+n.Method] {
			if n.Method == "" {
				n.Method = target.Identifier(rt.Group, true)
			}
			base, i := n.Method, max(next[n.Service+"/"+n.Method], 2)
			for seen[fmt.Sprintf("%s/%s_%d", n.Service, base, i)] {
				i++
			}
			n.Method = fmt.Sprintf("%s_%d", base, i)
			next[n.Service+"/"+base] = i + 1
		}
		seen[n.Service+"/"+n.Method] = true
		mc := grpcMethodConfig{Name: []target.GRPCName{n}, Timeout: target.ProtoDur(rt.Timeout)}
		label := n.Service + "/" + n.Method
		if n.Method == "" {
			label = n.Service + " (every method)"
		}
		d.Note("%s, group %q:", label, rt.Group)
		if rt.Synthetic {
			d.Note("  %s", rt.Describe())
		}
		d.Note("  timeout %s: %s", mc.Timeout, rt.TimeoutWhy)
		grpcRetries(d, rt, &mc, p.HerdWindow)
		cfg.MethodConfig = append(cfg.MethodConfig, mc)
	}
	if b := p.Budget; b != nil {
		tr := math.Max(0.001, math.Round(*b*1000)/1000)
		cfg.RetryThrottling = &grpcThrottling{MaxTokens: 10, TokenRatio: tr}
		d.Note("retryThrottling: tokenRatio %s = %s (each success earns it, each failed attempt costs 1, retries stop at half the tokens); maxTokens 10 stops retries after about 5 failures in a row", target.Ratio(tr), p.BudgetWhy)
	}
	connect, why := p.ClusterConnect()
	d.Note("connect timeout %s (%s) is not part of a service config: dial with grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: ...})", target.ProtoDur(connect), why)
	if p.Bulkhead != nil {
		d.Note("bulkhead %s: gRPC has no client-side limit of calls in flight; use a semaphore or an interceptor", p.BulkheadWhy)
	}
	grpcSwitch(d, cfg)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return err
	}
	d.Body.Write(b.Bytes())
	return nil
}

// grpcRetries writes a method config's retryPolicy or hedgingPolicy.
func grpcRetries(d *target.Doc, rt target.Route, mc *grpcMethodConfig, herdWindow time.Duration) {
	codes, skipped := Codes(rt.RetryOn)
	switch {
	case rt.Hedge != nil:
		h := rt.Hedge
		hp := &grpcHedgingPolicy{MaxAttempts: min(h.Attempts, MaxAttempts), HedgingDelay: target.ProtoDur(target.CeilMs(h.DelaySeconds)), NonFatalStatusCodes: codes}
		mc.HedgingPolicy = hp
		d.Note("  hedgingPolicy: another request %s (%s) after the last one, up to maxAttempts %d, until one answers; nonFatalStatusCodes %s send the next at once. With independent attempts p99 %s, p99.9 %s, for %s more requests",
			hp.HedgingDelay, target.QuantileName(h.Quantile), hp.MaxAttempts, strings.Join(codes, ", "), target.Secs(h.P99Seconds), target.Secs(h.P999Seconds), target.Percent(h.ExtraLoadFraction))
		d.Note("  hedgingPolicy replaces retryPolicy. grpc-java implements it; grpc-go (1.85) and gRPC C-core drop it without a word, so their clients neither hedge nor retry this method: write the config without %s for them", usage.Hedge)
	case rt.Attempts <= 1:
		d.Note("  no retryPolicy (gRPC needs maxAttempts >= 2): %s", rt.AttemptsWhy)
	case rt.NeverSentOnly():
		d.Note("  no retryPolicy: %s, and the failures that prove a request was never applied are the ones gRPC retries transparently; a retryPolicy on UNAVAILABLE would also repeat calls the server may have processed", rt.IdempotentWhy)
	case len(codes) == 0:
		d.Note("  no retryPolicy: gRPC has no status for %s (a per-try timeout cannot be written)", strings.Join(rt.RetryOn, ", "))
	default:
		rp := &grpcRetryPolicy{
			MaxAttempts:          min(rt.Attempts, MaxAttempts),
			InitialBackoff:       target.ProtoDur(rt.BackoffBase),
			MaxBackoff:           target.ProtoDur(rt.BackoffCap),
			BackoffMultiplier:    2,
			RetryableStatusCodes: codes,
		}
		// grpc-go draws a wait from 0.8 to 1.2 x min(initialBackoff x
		// 2^n, maxBackoff): a herd's first retries spread over 0.4 x
		// initialBackoff only, so the herd's window needs 2.5 times it.
		var herdWhy string
		if herdWindow > 0 && rt.BackoffBase*2 < herdWindow*5 {
			base, _ := recommend.RoundUp(herdWindow * 5 / 2)
			herdWhy = fmt.Sprintf("; raised to %s for the herd: grpc-go spreads a first retry over 0.8 to 1.2 x initialBackoff, 0.4 x of it, and the herd's %s window needs 2.5 x that", target.FmtDur(base), target.FmtDur(herdWindow))
			rp.InitialBackoff = target.ProtoDur(base)
			if rt.BackoffCap < base {
				rp.MaxBackoff = target.ProtoDur(base)
			}
		}
		mc.RetryPolicy = rp
		d.Note("  maxAttempts %d: %s", rp.MaxAttempts, rt.AttemptsWhy)
		if rt.Attempts > MaxAttempts {
			d.Note("  gRPC treats maxAttempts above 5 as 5 (unless the channel raises it): %d attempts clamped to 5", rt.Attempts)
		}
		d.Note("  initialBackoff %s, maxBackoff %s, multiplier 2: %s%s; grpc-go draws each wait within 20 %% of min(initialBackoff x 2^n, maxBackoff) (gRFC A6 as amended), not full jitter", rp.InitialBackoff, rp.MaxBackoff, rt.BackoffWhy, herdWhy)
		d.Note("  retryableStatusCodes %s from %s", strings.Join(rp.RetryableStatusCodes, ", "), strings.Join(rt.RetryOn, ", "))
		if len(skipped) > 0 {
			d.Note("  no gRPC status for %s: left out", strings.Join(skipped, ", "))
		}
		if !rt.Idempotent {
			d.Note("  %s: UNAVAILABLE may follow a request the server applied; the call policy's %s asks for it anyway", rt.IdempotentWhy, usage.RetryOn)
		}
		d.Note("  %s", rt.HangText(false))
	}
}

// grpcObjectName is the name of a group's method config under service svc:
// the group's own service and method when it is a gRPC method path, else
// the group as a method of svc ("/api/orders POST": "APIOrdersPOST").
func grpcObjectName(svc, group string) target.GRPCName {
	if n := target.GRPCMethodPath(group); n != nil {
		return *n
	}
	return target.GRPCName{Service: svc, Method: target.Identifier(group, true)}
}

// Codes maps retry conditions to gRPC status codes, following gRPC's
// HTTP-to-gRPC mapping (doc/http-grpc-status-mapping.md): a failed
// connection, a refused stream, 429, 502, 503 and 504 are UNAVAILABLE; 429
// is also RESOURCE_EXHAUSTED, gRPC's own "slow down". A timeout and the
// other statuses have no status a retry policy could name.
func Codes(on []string) (codes, skipped []string) {
	add := func(c string) {
		if !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	for _, o := range on {
		switch o = strings.TrimSpace(o); o {
		case "connect-failure", "refused-stream", "502", "503", "504":
			add("UNAVAILABLE")
		case "429":
			add("UNAVAILABLE")
			add("RESOURCE_EXHAUSTED")
		default:
			skipped = append(skipped, o)
		}
	}
	return codes, skipped
}

// grpcRetriesOffJq is the jq program that removes every method config's
// retryPolicy and hedgingPolicy from a service config.
const grpcRetriesOffJq = `del(.methodConfig[].retryPolicy, .methodConfig[].hedgingPolicy)`

// grpcSwitch says how to turn the config's retries off without a deploy: a
// method config without retryPolicy is not retried (gRFC A6), and a
// channel applies the service config its name resolver returns when it
// changes (gRFC A2: the DNS TXT record _grpc_config.<host>, or xDS); one
// compiled into the client is changed by a deploy only.
func grpcSwitch(d *target.Doc, cfg Config) {
	retries := false
	for _, mc := range cfg.MethodConfig {
		retries = retries || mc.RetryPolicy != nil || mc.HedgingPolicy != nil
	}
	if !retries {
		d.Note("Retries off during an incident: no method here retries, beyond gRPC's transparent retries of RPCs that never left the client.")
		return
	}
	d.Note("Retries off during an incident, without a deploy: serve this config without its retryPolicy and hedgingPolicy blocks (jq '%s' grpc.json) where the clients' name resolver reads it (xDS, or the DNS TXT record _grpc_config.HOST where the client enables it, gRFC A2): a channel applies a new service config without a restart. A config given in code (grpc.WithDefaultServiceConfig, Java's defaultServiceConfig) takes a deploy. gRPC's transparent retries of RPCs that never left the client stay.", grpcRetriesOffJq)
}

// naming: "<service>/<Group>" in CamelCase, or the group's own service
// and method when it is a gRPC method path (renderGRPC, grpcObjectName).
var naming = &target.Naming{
	Service:         target.GrpcFullName,
	CatchAllUnnamed: true,
	Of: func(svc, group string) string {
		n := grpcObjectName(svc, group)
		return n.Service + "/" + n.Method
	},
	Names: func(ob target.Object) []string {
		var out []string
		for _, m := range ob.Matches {
			if m.Kind == target.MatchMethod && strings.Contains(m.Value, "/") {
				out = append(out, m.Value)
			}
		}
		return out
	},
}
