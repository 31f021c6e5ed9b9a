package source

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// A source names itself before it reads anything, without the
// credentials of its URL: the name the report quotes is never a spool's.
func TestNamesFromTheStart(t *testing.T) {
	const u = "http://user:secret@db.example:8123/?password=hunter22#frag"
	ch := &ClickHouse{Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: u}}, Rows: sqlsource.Options{Table: "logs.access"}}
	assert.Equal(t, "logs.access at http://db.example:8123/?password=***", ch.Name())
	ch.Rows.Table = ""
	assert.Equal(t, "the query at http://db.example:8123/?password=***", ch.Name())
	j := &Jaeger{Options: jaegersource.Options{Service: "checkout", Connection: httpclient.Options{URL: "http://jaeger:16686"}}}
	assert.Equal(t, "service checkout at http://jaeger:16686", j.Name())
	p := &Prometheus{Options: promsource.Options{Metric: "http_request_duration_seconds_bucket", Connection: promsource.Connection{URL: "http://prom:9090"}}}
	assert.Equal(t, "http_request_duration_seconds at http://prom:9090", p.Name())
	f := &Files{Paths: []string{"a.log", "b.csv"}}
	assert.Equal(t, "a.log, b.csv", f.Name())
	assert.Equal(t, []Gives{Buckets, Spans, Buckets, Calls}, []Gives{ch.Gives(), j.Gives(), p.Gives(), f.Gives()})
}
