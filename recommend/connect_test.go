package recommend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestConnectTimeoutFromReusedConnections pins issue 29's item 5: nginx
// logs $upstream_connect_time 0.000 for a request sent on a kept-alive
// connection, and analyze recommended a 1 ms connect timeout from them.
// Connect times of 0 are not connects: they are counted as reused, and
// without a real connect there is no connect timeout to recommend.
func TestConnectTimeoutFromReusedConnections(t *testing.T) {
	g := histogram.NewSet().Group("route")
	for range 1497 {
		g.RecordConnect(0)
	}
	for range 3 {
		g.RecordConnect(time.Millisecond)
	}
	require.EqualValues(t, 1497, g.ReusedConnects)
	require.EqualValues(t, 3, g.Connect.Count())

	h := hist(t, linSpread(1500, 10*time.Millisecond, 400*time.Millisecond))
	r, err := recommend.RecommendMeasured(h, recommend.Measured{ConnectTimes: g.Connect, ReusedConnects: g.ReusedConnects}, recommend.DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 2*time.Millisecond, r.ConnectTimeout, "twice the median of the real connects, not the 1ms p99.9 of mostly reused ones")
	assert.EqualValues(t, 3, r.Connect.Measured)
	assert.EqualValues(t, 1497, r.Connect.Reused)
	assert.Contains(t, r.Connect.Reason, "1,497 connect times of 0 were requests on reused keepalive connections, not connects")

	// Every connection reused: no connect measured, none recommended.
	c := recommend.ConnectTimeout(nil, 1500, 0, 0.999, time.Second)
	assert.Zero(t, c.Timeout)
	assert.Equal(t, "no connect times: all 1,500 measured were 0, requests on reused keepalive connections that connected nothing", c.Reason)
	assert.Equal(t, time.Second, c.Longest, "at most the call's timeout")

	// With an RTT the rule still answers; the longest reasonable connect
	// timeout survives one lost SYN.
	c = recommend.ConnectTimeout(nil, 1500, 2*time.Millisecond, 0.999, 3*time.Second)
	assert.Equal(t, 6*time.Millisecond, c.Timeout)
	assert.Equal(t, recommend.OneLostSYN, c.Longest)

	// Connects that need longer than a lost SYN's retransmission: the
	// recommendation itself is the longest reasonable.
	slow := hist(t, linSpread(1000, 900*time.Millisecond, 1500*time.Millisecond))
	c = recommend.ConnectTimeout(slow, 0, 0, 0.999, 5*time.Second)
	assert.Equal(t, 2500*time.Millisecond, c.Timeout, "twice the median of 1.2s, rounded up")
	assert.Equal(t, c.Timeout, c.Longest)
}
