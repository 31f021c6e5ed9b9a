package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// herdLesson is issue 21's command: docs/method.md's herd experiment.
var herdLesson = []string{"simulate", "--herd", "1000", "--capacity", "5000", "--reject-cost", "0.05", "--attempts", "8",
	"--backoff-base", "10ms", "--backoff-cap", "2s"}

type herdDoc struct {
	Herd struct {
		Clients           int
		ClientsSource     string  `json:"clients_source"`
		CapacityPerSecond float64 `json:"capacity_per_second"`
		CapacitySource    string  `json:"capacity_source"`
		RejectCost        float64 `json:"reject_cost"`
		WindowSeconds     float64 `json:"window_seconds"`
		Strategies        []struct {
			Name         string
			Calls        int64
			Served       int
			GaveUp       int    `json:"gave_up"`
			Busiest      int    `json:"busiest_retry_ms_calls"`
			LastServedMs *int64 `json:"last_served_ms"`
		}
		RecommendedBackoff struct {
			BaseSeconds float64 `json:"base_seconds"`
			CapSeconds  float64 `json:"cap_seconds"`
			Reason      string
		} `json:"recommended_backoff"`
		Warnings []string
	}
}

// The herd without data: the lesson's shape in JSON, and the warning for
// a backoff narrower than the crowd.
func TestSimulateHerd(t *testing.T) {
	out, errOut, code := execute(t, "", append(herdLesson, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	var doc herdDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	h := doc.Herd
	assert.Equal(t, 1000, h.Clients)
	assert.Equal(t, 5000.0, h.CapacityPerSecond)
	assert.Equal(t, 0.05, h.RejectCost)
	assert.Equal(t, 0.2, h.WindowSeconds)
	require.Len(t, h.Strategies, 7)
	for _, s := range h.Strategies {
		switch s.Name {
		case "none", "fixed", "exponential":
			assert.Equal(t, 0, s.Served, s.Name)
			assert.Equal(t, 1000, s.Busiest, s.Name)
			assert.Nil(t, s.LastServedMs, s.Name)
		default:
			assert.GreaterOrEqual(t, s.Served, 990, s.Name)
			assert.Less(t, s.Busiest, 300, s.Name)
		}
	}
	assert.GreaterOrEqual(t, h.RecommendedBackoff.BaseSeconds, 0.2)
	assert.Equal(t, 2.0, h.RecommendedBackoff.CapSeconds)

	text, errOut, code := execute(t, "", "simulate", "--herd", "1000", "--capacity", "5000", "--backoff-base", "10ms", "--backoff-cap", "50ms")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "No data read: the herd alone")
	assert.Contains(t, text, "Warning [TT-HERD-BACKOFF-CAP-NARROW]: the backoff cap 50ms is narrower than the 200ms the crowd of\n  1,000 needs")

	// With data: the capacity from the busiest second (464 calls) and the
	// default headroom; the crowd from --clients x the calls in flight at
	// the peak.
	out, errOut, code = execute(t, "", "simulate", mixture, "--clients", "20", "--attempts", "4", "-o", "json")
	require.Equal(t, 0, code, errOut)
	doc = herdDoc{}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 232.0, doc.Herd.CapacityPerSecond)
	assert.Contains(t, doc.Herd.CapacitySource, "0.5 x the busiest second, 464 calls")
	assert.Contains(t, doc.Herd.ClientsSource, "--clients 20 x ")
	assert.Greater(t, doc.Herd.Clients, 20)
}

func TestHerdFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", mixture, "--capacity", "5000"}, "give --herd or --clients too"},
		{[]string{"simulate", mixture, "--herd", "10", "--clients", "3"}, "--clients: give it or --herd, not both"},
		{[]string{"simulate", "--herd", "10", "--capacity", "100", "--reject-cost", "1"}, `--reject-cost: "1" is not a share from 0 up to 1`},
		{[]string{"simulate", "--herd", "-1", "--capacity", "100"}, "--herd: -1 must lie between 1"},
		{[]string{"simulate", "--herd", "10", "--capacity", "-5"}, "--capacity must be positive"},
	} {
		_, errOut, code := execute(t, "", c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, errOut, c.want, "%v", c.args)
	}
}

// The policy takes the backoff the herd needs (never narrower than the
// user's), shows it as a step, and the snippets carry it with the reason.
func TestHerdSizesThePolicy(t *testing.T) {
	args := []string{"analyze", mixture, "--herd", "1000", "--capacity", "5000", "--attempts", "3", "--idempotent",
		"--backoff-base", "10ms", "--backoff-cap", "50ms"}
	out, errOut, code := execute(t, "", append(args, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Groups []struct {
			Policy struct {
				BackoffBaseSeconds float64 `json:"backoff_base_seconds"`
				BackoffCapSeconds  float64 `json:"backoff_cap_seconds"`
				Steps              []struct{ Rule, Reason string }
			}
		}
		Herd struct {
			Strategies []struct{ Name string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Groups, 1)
	p := doc.Groups[0].Policy
	assert.Equal(t, 0.2, p.BackoffBaseSeconds)
	assert.Equal(t, 2.0, p.BackoffCapSeconds)
	last := p.Steps[len(p.Steps)-1]
	assert.Equal(t, "herd", last.Rule)
	assert.Contains(t, last.Reason, "widened from the policy's 10ms capped at 50ms for the herd: 1,000 clients at 5,000 calls/s need 200ms")

	envoy, errOut, code := execute(t, "", append(args, "--emit", "envoy")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, envoy, "retry_back_off 0.200s to 2.000s: backoff 200ms doubling up to 2s, full jitter, from the call policy, sized for the herd: 1,000 clients at 5,000 calls/s need 200ms to be served once")
	assert.Contains(t, envoy, "base_interval: 0.200s")
	// grpc-go's jitter spreads a first retry over 0.4 x initialBackoff:
	// the herd's 200ms needs 500ms.
	grpc, errOut, code := execute(t, "", append(args, "--emit", "grpc")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, grpc, `"initialBackoff": "0.500s"`)
	assert.Contains(t, grpc, "raised to 500ms for the herd: grpc-go spreads a first retry over 0.8 to 1.2 x initialBackoff")

	// A backoff already wide enough is kept, and no step is added.
	out, errOut, code = execute(t, "", "analyze", mixture, "--herd", "1000", "--capacity", "5000", "--attempts", "3", "--idempotent",
		"--backoff-base", "500ms", "--backoff-cap", "5s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	p = doc.Groups[0].Policy
	assert.Equal(t, []float64{0.5, 5}, []float64{p.BackoffBaseSeconds, p.BackoffCapSeconds})
	assert.NotEqual(t, "herd", p.Steps[len(p.Steps)-1].Rule)
}
