package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readBucketRows(t *testing.T, input string) ([]BucketRow, []string, error) {
	t.Helper()
	var rows []BucketRow
	var bad []string
	err := ReadBuckets(strings.NewReader(input), "b.csv", nil, func(r *BucketRow) error {
		c := *r
		c.Excluded = nil
		if len(r.Excluded) > 0 {
			c.Excluded = map[string]int64{}
			for k, v := range r.Excluded {
				c.Excluded[k] = v
			}
		}
		rows = append(rows, c)
		return nil
	}, func(err error) error {
		var pe *ParseError
		require.True(t, errors.As(err, &pe))
		bad = append(bad, err.Error())
		return nil
	})
	return rows, bad, err
}

func TestReadBuckets(t *testing.T) {
	rows, bad, err := readBucketRows(t, "route,method,bucket_us,calls,censored,excluded_5xx\n"+
		"/a,GET,2048,10,1,2\n"+
		",POST,31424,3,0,0\n"+
		"/a,GET,x,1,0,0\n"+
		"/a,GET,5,1,1,1\n"+
		"/a,GET,5\n")
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, BucketRow{Group: "/a GET", BucketUS: 2048, Calls: 10, Censored: 1, Excluded: map[string]int64{"status 5xx": 2}}, rows[0])
	assert.Equal(t, BucketRow{Group: "- POST", BucketUS: 31424, Calls: 3}, rows[1], "an empty group value is -")
	require.Len(t, bad, 3)
	assert.Equal(t, `b.csv:4: column "bucket_us": "x" is not a whole number of microseconds, 0 or more`, bad[0])
	assert.Contains(t, bad[1], `b.csv:5: column "calls": "1" is fewer than the censored and excluded calls, 2`)
	assert.Contains(t, bad[2], "b.csv:6: has 3 columns, the header 6")

	// TSV, without the optional columns.
	rows, bad, err = readBucketRows(t, "bucket_us\tcalls\n7\t4\n")
	require.NoError(t, err)
	assert.Empty(t, bad)
	assert.Equal(t, []BucketRow{{Group: "", BucketUS: 7, Calls: 4}}, rows)

	_, _, err = readBucketRows(t, "route,latency\n/a,5\n")
	assert.ErrorContains(t, err, "b.csv:1: the header has no bucket_us (or second) and calls columns")

	// Rows of arrivals, for the rates.
	rows, bad, err = readBucketRows(t, "route,second,calls\n/a,1793613600,400\n/a,-5,1\n")
	require.NoError(t, err)
	assert.Equal(t, []BucketRow{{Group: "/a", Arrivals: true, Second: 1793613600, Calls: 400}}, rows)
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0], `b.csv:3: column "second": "-5" is not a second of Unix time`)
	assert.True(t, sniffBuckets([]byte("route,second,calls")))
	assert.True(t, sniffBuckets([]byte(`"route","bucket_us","calls","censored"`)), "ClickHouse's CSVWithNames")
	assert.True(t, sniffBuckets([]byte("route,bucket_us,calls,censored")))
	assert.False(t, sniffBuckets([]byte("route,latency_ms")))

	// JSON lines (ClickHouse's JSONEachRow quotes 64-bit integers; other
	// engines do not): the first line's keys, in their order, are the
	// header; later lines are matched by name.
	rows, bad, err = readBucketRows(t, `{"route":"/a","method":"GET","bucket_us":"2048","calls":"10","censored":"1","excluded_5xx":"2"}`+"\n"+
		`{"calls":3,"method":"POST","route":null,"bucket_us":31424,"censored":0,"excluded_5xx":0}`+"\n"+
		"\n"+
		`{"route":"/a","method":"GET","bucket_us":"2048","calls":"1","extra":"1"}`+"\n"+
		`{"route":{"x":1},"bucket_us":"2048","calls":"1"}`+"\n"+
		`{"route":"/a",`+"\n"+
		`{"route":"/b","method":"GET","bucket_us":"x","calls":"1","censored":"0","excluded_5xx":"0"}`)
	require.NoError(t, err)
	assert.Equal(t, []BucketRow{
		{Group: "/a GET", BucketUS: 2048, Calls: 10, Censored: 1, Excluded: map[string]int64{"status 5xx": 2}},
		{Group: "- POST", BucketUS: 31424, Calls: 3},
	}, rows)
	assert.Equal(t, []string{
		`b.csv:4: has the column "extra", which the first line has not`,
		`b.csv:5: the value of "route" is not a string, number, boolean or null`,
		"b.csv:6: is a JSON object cut off",
		`b.csv:7: column "bucket_us": "x" is not a whole number of microseconds, 0 or more`,
	}, bad)
	assert.True(t, sniffBuckets([]byte(`{"route":"/a","bucket_us":"2048","calls":"10"}`)))
	assert.False(t, sniffBuckets([]byte(`{"route":"/a","latency_ms":3}`)))

	// Request targets, whose routes are made on reading (--by
	// 'route(COL)' where the engine cannot make them).
	rows, bad, err = readBucketRows(t, "route_target,method,bucket_us,calls\n/users/42?x=1,GET,5,2\nhttp://h:80/users/7f3a9c21#top,GET,5,1\n/health,GET,9,1\n,GET,1,1\n")
	require.NoError(t, err)
	assert.Empty(t, bad)
	assert.Equal(t, []string{"/users/{id} GET", "/users/{id} GET", "/health GET", "/ GET"}, []string{rows[0].Group, rows[1].Group, rows[2].Group, rows[3].Group})
	var patterned []string
	require.NoError(t, ReadBuckets(strings.NewReader("route_target,bucket_us,calls\n/users/me,5,2\n/users/42,5,1\n"), "p.csv", []string{"/users/me"},
		func(r *BucketRow) error { patterned = append(patterned, r.Group); return nil }, func(err error) error { return err }))
	assert.Equal(t, []string{"/users/me", "/users/{id}"}, patterned, "--route-pattern before the normalization")

	// The group the engine folded the groups beyond --max-groups into.
	rows, bad, err = readBucketRows(t, "route,bucket_us,calls,folded_groups\n/a,5,2,0\n,5,3,7\n,9,1,7\n/b,1,1,x\n")
	require.NoError(t, err)
	assert.Equal(t, []BucketRow{{Group: "/a", BucketUS: 5, Calls: 2}, {BucketUS: 5, Calls: 3, FoldedGroups: 7}, {BucketUS: 9, Calls: 1, FoldedGroups: 7}}, rows)
	assert.Equal(t, []string{`b.csv:5: column "folded_groups": "x" is not a count`}, bad)
}

// FuzzBuckets checks that reading buckets never panics, that its errors
// are bad rows with a line or the header's, and that every row's counts
// hold its censored and excluded calls.
func FuzzBuckets(f *testing.F) {
	f.Add("route,bucket_us,calls,censored,excluded_5xx\n/a,2048,10,1,2\n")
	f.Add("bucket_us\tcalls\n7\t4\n")
	f.Add(`{"route":"/a","bucket_us":"2048","calls":"10","censored":1}` + "\n" + `{"calls":3,"route":null,"bucket_us":31424}` + "\n")
	f.Add("route,bucket_us,calls,folded_groups\n,5,3,7\n")
	f.Fuzz(func(t *testing.T, input string) {
		err := ReadBuckets(strings.NewReader(input), "f", nil, func(r *BucketRow) error {
			sum := r.Censored
			for _, n := range r.Excluded {
				sum += n
			}
			if r.BucketUS < 0 || r.Calls < sum {
				t.Fatalf("row %+v", r)
			}
			return nil
		}, func(err error) error {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 { // a JSON line is a row as well as the header
				t.Fatalf("not a bad row: %v", err)
			}
			return nil
		})
		if err != nil && !strings.Contains(err.Error(), "f:1:") && !errors.Is(err, ErrEmptyInput) {
			t.Fatalf("error %v", err)
		}
	})
}

// window_start (tunetimeout clickhouse --window) is the window of a row's
// calls, not a group column; NULL (\N) or empty is a row without a time;
// anything else not a second of Unix time is a bad row; a name in it is
// shown escaped.
func TestReadBucketsWindows(t *testing.T) {
	rows, bad, err := readBucketRows(t, "\"route\",\"window_start\",\"bucket_us\",\"calls\"\n"+
		"/a,1800000000,2048,10\n"+
		"/a,\\N,7,1\n"+
		"/a,,7,2\n"+
		"/a,-3600,7,1\n"+
		"/a,\"18:00\x1b[31m\",7,1\n")
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, BucketRow{Group: "/a", BucketUS: 2048, Calls: 10, Windowed: true, Timed: true, Window: 1800000000}, rows[0])
	assert.Equal(t, BucketRow{Group: "/a", BucketUS: 7, Calls: 1, Windowed: true}, rows[1])
	assert.Equal(t, BucketRow{Group: "/a", BucketUS: 7, Calls: 2, Windowed: true}, rows[2])
	require.Len(t, bad, 2)
	assert.Equal(t, `b.csv:5: column "window_start": "-3600" is not a second of Unix time from 1970 to 2262`, bad[0])
	assert.Equal(t, `b.csv:6: column "window_start": "18:00\x1b[31m" is not a second of Unix time from 1970 to 2262`, bad[1])
}
