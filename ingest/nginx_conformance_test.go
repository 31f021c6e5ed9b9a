package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ingressConformance is a log of the ingress-nginx controller in its
// default upstreaminfo format, from elastic/beats' filebeat test data (see
// testdata/conformance/README.md).
var ingressConformance = filepath.Join("testdata", "conformance", "ingress-nginx-upstreaminfo.log")

func decodeIngressConformance(t *testing.T, format string, o Options) []Sample {
	t.Helper()
	f, err := os.Open(ingressConformance)
	require.NoError(t, err)
	defer f.Close()
	d, err := NewDecoder(format, f, "ingress.log", o)
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errorStrings(errs), "every conformance line must parse")
	return samples
}

func TestIngressNginxConformance(t *testing.T) {
	// $request_time of each line, in ms, in order.
	requestTimes := []float64{1, 1, 0, 1, 0, 0, 1, 1, 0, 2, 1, 1, 1, 2, 1, 1, 2, 1, 0, 0, 1, 1, 1, 1, 33, 0, 0, 2, 1}

	for _, format := range []string{"ingress-nginx", "auto"} {
		t.Run(format, func(t *testing.T) {
			samples := decodeIngressConformance(t, format, Options{By: []string{"upstream"}})
			require.Len(t, samples, 29)
			var got []time.Duration
			for _, s := range samples {
				got = append(got, s.Latency)
			}
			want := make([]time.Duration, len(requestTimes))
			for i, v := range requestTimes {
				want[i] = millis(v)
			}
			assert.Equal(t, want, got)

			// The two requests with invalid methods, answered 400 without an upstream.
			for _, i := range []int{4, 5} {
				assert.Equal(t, 400, samples[i].Status, "line %d", i+1)
				assert.Equal(t, "-", samples[i].Group, "line %d: [] is no upstream name", i+1)
				assert.Empty(t, samples[i].Excluded, "line %d: the status rule excludes it, not the decoder", i+1)
			}
			assert.Equal(t, 502, samples[25].Status)
			assert.Equal(t, "default-web-8080", samples[0].Group)
			assert.Equal(t, "esmon-esmon-es-http-9200", samples[24].Group)
			assert.Equal(t, time.Date(2020, 2, 7, 11, 48, 51, 0, time.UTC), samples[0].Time)
			assert.Equal(t, time.Date(2022, 8, 24, 21, 4, 17, 0, time.UTC), samples[24].Time)
		})
	}

	t.Run("upstream times, summed over the servers tried", func(t *testing.T) {
		samples := decodeIngressConformance(t, "ingress-nginx", Options{Latency: "upstream"})
		require.Len(t, samples, 29)
		assert.Equal(t, millis(104), samples[22].Latency, "0.100, 0.004")
		assert.Equal(t, millis(104), samples[23].Latency, "0.100, 0.004")
		assert.Equal(t, millis(100), samples[28].Latency, "0.100, -")
		assert.Equal(t, millis(36), samples[24].Latency)
		for _, i := range []int{4, 5} {
			assert.Equal(t, ExcludedNoUpstream, samples[i].Excluded, "line %d: upstream time -", i+1)
			assert.Equal(t, 400, samples[i].Status)
		}
		last := decodeIngressConformance(t, "ingress-nginx", Options{Latency: "upstream-last"})
		assert.Equal(t, millis(4), last[22].Latency, "0.100, 0.004: the last try")
	})

	t.Run("addresses are just strings", func(t *testing.T) {
		// The same format with the upstream name renamed, so that grouping by
		// upstream falls back to the last address of $upstream_addr.
		format := strings.Replace(ingressUpstreamInfo, "[$proxy_upstream_name]", "[$upstream_name]", 1)
		samples := decodeIngressConformance(t, "nginx", Options{LogFormat: format, By: []string{"upstream"}})
		require.Len(t, samples, 29)
		want := map[int]string{
			0:  "172.17.0.5:8080",
			4:  "-",
			22: "172.17.0.7:8080",
			24: "[2a02:cf40::]:9200",
			25: "[2a02:cf40::4e36]:5000",
			26: "[2a02:cf40::::::::4e36]:500000000",
			27: "unix:/var/run/php-fpm.sock",
		}
		for i, w := range want {
			assert.Equal(t, w, samples[i].Group, "line %d", i+1)
		}
	})
}
