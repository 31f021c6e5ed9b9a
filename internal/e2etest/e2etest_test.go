package e2etest

import (
	"os/exec"
	"testing"
)

func TestRequireBinary(t *testing.T) {
	t.Setenv("TUNETIMEOUT_E2E", "")
	skipped := false
	t.Run("missing binary skips without TUNETIMEOUT_E2E", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		RequireBinary(t, "tunetimeout-no-such-binary", "apt-get install -y nothing")
		t.Error("did not skip")
	})
	if !skipped {
		t.Error("a missing binary must skip the test")
	}
	want, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	if got := RequireBinary(t, "sh", "-"); got != want {
		t.Errorf("RequireBinary(sh) = %q, want %q", got, want)
	}
}
