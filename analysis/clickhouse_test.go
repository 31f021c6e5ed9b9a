package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// RunClickHouse reads its answers under the table's and server's name from
// the start: a group whose name holds the spool's path keeps it (a
// replacement of the path in the report's text rewrote it into the
// source's name).
func TestRunClickHouseKeepsAValueLikeTheSpoolPath(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var spool string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The spool being written is the one file in the directory.
		dirs, _ := filepath.Glob(filepath.Join(tmp, "*"))
		require.Len(t, dirs, 1)
		spool = filepath.Join(dirs[0], "buckets.csv")
		fmt.Fprintf(w, "\"route\",\"bucket_us\",\"calls\",\"censored\",\"excluded_5xx\"\n\"/pay\",20000,100,0,0\n%s,20000,3,0,3\n", strconv.Quote(spool+"/x"))
	}))
	defer srv.Close()
	ch := ClickHouseOptions{
		Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: srv.URL}},
		Rows:   sqlsource.Options{Table: "logs.access", Latency: "duration_ms", Unit: time.Millisecond, By: []string{"route"}},
	}
	o := options()
	o.Rate = 50
	o.Ingest.By = []string{"route"}
	got, err := RunClickHouse(context.Background(), o, ch)
	require.NoError(t, err)
	require.NotEmpty(t, spool)
	assert.Equal(t, []string{"logs.access at " + srv.URL}, got.Input.Files)
	i := slices.IndexFunc(got.Input.Findings, func(f finding.Finding) bool { return f.Code == finding.GroupEmpty })
	require.GreaterOrEqual(t, i, 0, "the group of the failed calls is left out: %q", got.Input.Notes)
	empty := got.Input.Findings[i]
	assert.Equal(t, spool+"/x", empty.Fields["group"])
	assert.Contains(t, empty.Message, strconv.Quote(spool+"/x"))
	assert.Equal(t, got.Input.Notes, finding.Messages(got.Input.Findings))
}
