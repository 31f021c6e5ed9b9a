package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMethodName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"GET", "GET"},
		{"get", "GET"}, // as --by method reads it
		{"PATCH", "PATCH"},
		{"PROPFIND", MethodOther},
		{"-", ""},
		{"", ""},
		{"\x16\x03\x01", ""},           // a TLS handshake nginx logged as the request
		{"GET /x HTTP/1.1", ""},        // not a token
		{string(make([]byte, 40)), ""}, // too long to be a method
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, MethodName(tt.in), "%q", tt.in)
		assert.Equal(t, tt.want, MethodName([]byte(tt.in)), "%q", tt.in)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = MethodName([]byte("DELETE")) }), "the method of every log line")
}

// TestSampleMethod: the formats that record a request's method say it in
// Sample.Method whether or not the input is grouped by it (issue 29,
// item 18): nginx's $request, a CSV method column.
func TestSampleMethod(t *testing.T) {
	samples, errs := decodeNginxLines(t, Options{},
		`127.0.0.1 - - [29/Nov/2026:16:19:00 +0000] "GET /api/search?q=1 HTTP/1.1" 200 0 "-" "curl" 0.010`,
		`127.0.0.1 - - [29/Nov/2026:16:19:00 +0000] "POST /api/orders HTTP/1.1" 201 0 "-" "curl" 0.020`,
		`127.0.0.1 - - [29/Nov/2026:16:19:00 +0000] "-" 400 0 "-" "-" 0.000`,
	)
	assert.Empty(t, errs)
	var got []string
	for _, s := range samples {
		got = append(got, s.Method)
	}
	assert.Equal(t, []string{"GET", "POST", ""}, got)

	samples, errs = decodeString(t, "route,Method,latency_ms\n/a,GET,1\n/a,post,2\n/a,,3\n", CSVOptions{})
	assert.Empty(t, errs)
	got = nil
	for _, s := range samples {
		got = append(got, s.Method)
	}
	assert.Equal(t, []string{"GET", "POST", ""}, got)

	samples, _ = decodeString(t, "route,latency_ms\n/a,1\n", CSVOptions{})
	assert.Equal(t, "", samples[0].Method, "no method column")
}
