package httpclient

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// The rules are tested through their users too: promsource's tests (secrets,
// retries, redirects, the cap) and jaegersource's.

func TestBackoffIsCappedFullJitter(t *testing.T) {
	var got []time.Duration
	for n := range 5 {
		got = append(got, Backoff(100*time.Millisecond, 300*time.Millisecond, 1, n))
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}, got)
	assert.Equal(t, 50*time.Millisecond, Backoff(100*time.Millisecond, time.Second, 0.25, 1))
	assert.Equal(t, time.Second, Backoff(100*time.Millisecond, time.Second, 1, 62), "no overflow past 2^30")
}

func TestCapped(t *testing.T) {
	b, err := io.ReadAll(Capped(strings.NewReader("12345678"), 8))
	require.NoError(t, err, "exactly the cap reads to the end")
	assert.Equal(t, "12345678", string(b))
	_, err = io.ReadAll(Capped(strings.NewReader("123456789"), 8))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrTooLarge))
	assert.Equal(t, "the answer is larger than 8 bytes (--max-response-bytes)", err.Error())
}

func TestRedactorCleansEveryForm(t *testing.T) {
	r := &Redactor{}
	r.AddCredential("Basic YWRtaW46czNjcjN0L3B3") // admin:s3cr3t/pw
	got := r.Clean(`sent "Basic YWRtaW46czNjcjN0L3B3", user admin:s3cr3t/pw, pass s3cr3t/pw, escaped s3cr3t%2Fpw`)
	assert.NotContains(t, got, "s3cr3t")
	assert.NotContains(t, got, "YWRtaW46")
}

func TestCheckNamesTheServer(t *testing.T) {
	err := Options{Server: "Jaeger", ExampleURL: "http://localhost:16686", ExampleEnv: "JAEGER_TOKEN", BearerTokenEnv: "$x"}.Check()
	require.Error(t, err)
	assert.Equal(t, "--url is required: the address of Jaeger, e.g. http://localhost:16686\n"+
		"--bearer-token-env takes the name of an environment variable, such as JAEGER_TOKEN; what it was given is not one (the secret itself?), so it is not shown", err.Error())
}

// TestErrTooLargeNamesOption: ErrTooLarge names the option as usage.Render
// writes it when the message is read.
func TestErrTooLargeNamesOption(t *testing.T) {
	assert.Equal(t, "the answer is larger than --max-response-bytes", ErrTooLarge.Error())
	saved := usage.Render
	t.Cleanup(func() { usage.Render = saved })
	usage.Render = func(o usage.Option) string { return "<" + string(o) + ">" }
	assert.Equal(t, "the answer is larger than <max-response-bytes>", ErrTooLarge.Error())
	assert.ErrorIs(t, &TooLargeError{Limit: 10}, ErrTooLarge)
}
