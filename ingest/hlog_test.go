package ingest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSniffHlog(t *testing.T) {
	yes := []string{
		"#[tunetimeout interval log 1: values in microseconds]",
		"#[Logged with jHiccup version 2.0.7-SNAPSHOT]",
		"#[Histogram log format version 1.2]",
		"#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 08:24:39 PDT 2015]",
		`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`,
		"0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=",
		"Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAAB",
	}
	no := []string{
		"# a comment", "latency_ms", "0.127,1.007,2.769", "0.127,1.007,2.769,HIST", "Tag=A,x,1,2,HISTF",
		`10.0.0.1 - - [07/Feb/2020:11:48:51 +0000] "GET /a HTTP/1.1" 200 5 "-" "-" 0.1`,
		`{"duration":0.1}`,
	}
	for _, l := range yes {
		assert.True(t, sniffHlog([]byte(l)), l)
	}
	for _, l := range no {
		assert.False(t, sniffHlog([]byte(l)), l)
	}
	// Auto-detection picks hlog for every public sample, and no other
	// format claims their first lines.
	files, err := filepath.Glob("../testdata/hlog/*.hlog")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		got, _, err := Detect("auto", f, name, Options{})
		require.NoError(t, err, name)
		assert.Equal(t, "hlog", got.Name, name)
		assert.True(t, got.Histograms)
		_, err = f.Seek(0, 0)
		require.NoError(t, err)
		line, err := peekFirstLine(bufio.NewReader(f))
		require.NoError(t, err)
		for _, other := range Formats() {
			if other.Name != "hlog" && other.Sniff != nil {
				assert.False(t, other.Sniff(line), "%s claims %s", other.Name, name)
			}
		}
		f.Close()
	}
	_, err = NewDecoder("hlog", strings.NewReader("#[x]\n"), "a.hlog", Options{})
	assert.ErrorContains(t, err, "holds histograms, not samples")
}
