package sqlsource

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
)

func TestClickHouseMessage(t *testing.T) {
	msg := func(body string) []any {
		code, m := clickHouseMessage(body)
		return []any{code, m}
	}
	assert.Equal(t, []any{60, "Code 60: Table default.nope doesn't exist."},
		msg("Code: 60, e.displayText() = DB::Exception: Table default.nope doesn't exist., e.what() = DB::Exception\n"))
	assert.Equal(t, []any{62, "Code 62: Syntax error: failed at position 1"},
		msg("Code: 62. DB::Exception: Syntax error: failed at position 1"), "newer releases")
	assert.Equal(t, []any{0, "(no message)"}, msg(""))
	assert.Equal(t, []any{0, "Bad Request"}, msg("Bad Request\n"))
}

// Against a fake ClickHouse (the error paths; e2e/sql_test.go runs the
// real one): the query goes as a POST of its text with wait_end_of_query
// and max_execution_time, and again after a 503, the answer is copied as
// it is, an error status is explained and no secret shows.
func TestClickHouseFetch(t *testing.T) {
	const secret = "s3cret-password"
	t.Setenv("TT_CH_PASSWORD", secret)
	var got *http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if len(bodies) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.URL.Query().Get("database") == "missing" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("Code: 81, e.displayText() = DB::Exception: Database missing doesn't exist, password " + secret + ", e.what() = DB::Exception\n"))
			return
		}
		w.Write([]byte("\"bucket_us\",\"calls\"\n5,1\n"))
	}))
	defer srv.Close()
	ch := ClickHouse{Connection: httpclient.Options{URL: srv.URL, BasicUser: "tt", BasicPasswordEnv: "TT_CH_PASSWORD", Attempts: 2, Timeout: 2500 * time.Millisecond}}
	var out bytes.Buffer
	display, err := ch.Fetch(context.Background(), "SELECT 1;", &out)
	require.NoError(t, err)
	assert.Equal(t, srv.URL, display)
	assert.Equal(t, "\"bucket_us\",\"calls\"\n5,1\n", out.String())
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, []string{"SELECT 1 FORMAT CSVWithNames", "SELECT 1 FORMAT CSVWithNames"}, bodies, "sent again after the 503")
	assert.Empty(t, got.URL.Query().Get("query"))
	assert.Equal(t, "1", got.URL.Query().Get("wait_end_of_query"))
	assert.Equal(t, "3", got.URL.Query().Get("max_execution_time"), "2.5 s, rounded up")
	user, pass, ok := got.BasicAuth()
	assert.True(t, ok)
	assert.Equal(t, "tt", user)
	assert.Equal(t, secret, pass)

	ch.Database = "missing"
	_, err = ch.Fetch(context.Background(), "SELECT 1", &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ClickHouse at "+srv.URL+" refused the query (HTTP 404): Code 81: Database missing doesn't exist")
	assert.NotContains(t, err.Error(), secret, "the server quoted the password: it is redacted")
}

// Issue 30, item 9: an error that echoes the Authorization header was cut
// at 300 characters before its secrets were replaced; the cut fell inside
// the base64 of user:password, which then no longer matched whole and
// showed, most of it (default:S3cr3tPassw0rdX decoded from it). Every cut
// position is tried.
func TestClickHouseErrorCutNeverLeavesPartOfASecret(t *testing.T) {
	const user, secret = "default", "S3cr3tPassw0rdX"
	t.Setenv("TT_CH_PASSWORD", secret)
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + secret))
	for pad := 240; pad <= 300; pad++ {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "Code: 516. DB::Exception: "+strings.Repeat("x", pad)+" Authorization: "+r.Header.Get("Authorization")+" password "+secret+"\n")
		}))
		ch := ClickHouse{Connection: httpclient.Options{URL: srv.URL, BasicUser: user, BasicPasswordEnv: "TT_CH_PASSWORD", Attempts: 1}}
		_, err := ch.Fetch(context.Background(), "SELECT 1", io.Discard)
		srv.Close()
		require.Error(t, err)
		msg := err.Error()
		require.Contains(t, msg, "refused the query (HTTP 403): Code 516: ")
		for i := 0; i+6 <= len(auth); i++ {
			require.NotContains(t, msg, auth[i:i+6], "pad %d: part of the base64 credential", pad)
		}
		for _, part := range []string{"S3cr3t", "Passw0rd"} {
			assert.NotContains(t, msg, part, "pad %d", pad)
		}
	}
}
