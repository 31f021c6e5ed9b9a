package grpc_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	grpctarget "github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// TestSnippets: grpc's snippets are accepted by its own parser, and read
// back by its documented semantics keep the deadline and the idempotency
// rule (targettest.Snippets).
func TestSnippets(t *testing.T) {
	targettest.Snippets(t, grpctarget.Target, targettest.Checks{
		Validate:   targettest.Each(validateGRPC),
		Behaviours: readGRPC,
		Simulation: targettest.Simulation{Opts: target.Options{}, HangAttempts: 1, HangWait: time.Second, FailSuccess: 0.99,
			Why: "no per-try timeout: the first attempt runs into the call's deadline; fast failures answer and are retried"},
		Refuses: []targettest.Mistake{
			{Name: "grpc maxAttempts 1", From: `"maxAttempts": 3`, To: `"maxAttempts": 1`},
			{Name: "grpc maxBackoff < initialBackoff", From: `"maxBackoff": "0.250s"`, To: `"maxBackoff": "0.010s"`},
			{Name: "grpc Go duration", From: `"timeout": "1.000s"`, To: `"timeout": "1000ms"`},
		},
	})
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

func readGRPC(body []byte) ([]targettest.Behaviour, error) {
	var cfg grpctarget.Config
	if err := json.Unmarshal(body, &cfg); err != nil {
		return nil, err
	}
	var out []targettest.Behaviour
	for _, mc := range cfg.MethodConfig {
		t, err := time.ParseDuration(mc.Timeout)
		if err != nil {
			return nil, err
		}
		// The timeout is the call's deadline over every attempt; there is
		// no per-try timeout, and transparent retries cover never-sent RPCs.
		b := targettest.Behaviour{Name: mc.Name[0].Service + "/" + mc.Name[0].Method, Bound: t, Worst: t, Attempts: 1, RetryNeverSent: true, CatchAll: mc.Name[0].Method == ""}
		if rp := mc.RetryPolicy; rp != nil {
			b.Attempts, b.RetrySent = rp.MaxAttempts, true
			b.Base, _ = time.ParseDuration(rp.InitialBackoff)
			b.Cap, _ = time.ParseDuration(rp.MaxBackoff)
		}
		if hp := mc.HedgingPolicy; hp != nil {
			b.RetrySent = true
			b.HedgeAttempts = hp.MaxAttempts
			b.Hedge, _ = time.ParseDuration(hp.HedgingDelay)
		}
		out = append(out, b)
	}
	return out, nil
}

// TestGRPCClamp: gRPC treats maxAttempts above 5 as 5; the snippet says 5
// and its explanation says why.
func TestGRPCClamp(t *testing.T) {
	r := targettest.LoadReport(t, "policy.json")
	body, err := grpctarget.Target.Render(r, target.Options{})
	require.NoError(t, err)
	assert.Contains(t, string(body), `"maxAttempts": 5`)
	assert.NotContains(t, string(body), `"maxAttempts": 7`)
	notes, err := grpctarget.Target.Explain(r, target.Options{})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(notes, "\n"), "7 attempts clamped to 5")
}
