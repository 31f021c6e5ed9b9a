package grpc_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target/grpc"
	grpctarget "github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestRetriesOffGRPCJq runs the gRPC header's jq program on the config:
// the result is a service config with the same method configs and
// timeouts, and no retryPolicy or hedgingPolicy left.
func TestRetriesOffGRPCJq(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("no jq (apt-get install jq)")
	}
	for _, f := range targettest.Fixtures[1:3] {
		body, err := grpctarget.Target.Render(targettest.LoadReport(t, f.Report), f.Opts)
		require.NoError(t, err)
		require.Contains(t, string(body), "Policy", "precondition: a method retries or hedges")
		note := targettest.RetriesOffNote(t, grpctarget.Target, f)
		m := regexp.MustCompile(`jq '([^']*)' grpc\.json`).FindStringSubmatch(note)
		require.NotNil(t, m, note)
		cmd := exec.Command(jq, m[1])
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.Output()
		require.NoError(t, err)
		var before, after grpc.Config
		require.NoError(t, json.Unmarshal(body, &before))
		require.NoError(t, json.Unmarshal(out, &after))
		require.Len(t, after.MethodConfig, len(before.MethodConfig))
		for i, mc := range after.MethodConfig {
			assert.Nil(t, mc.RetryPolicy, f.Name)
			assert.Nil(t, mc.HedgingPolicy, f.Name)
			assert.Equal(t, before.MethodConfig[i].Timeout, mc.Timeout)
			assert.Equal(t, before.MethodConfig[i].Name, mc.Name)
		}
	}
}
