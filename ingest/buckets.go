package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/names"
)

// HDR buckets a SQL engine computed (sqlsource, tunetimeout sql): CSV or
// TSV with a header, one row per group and bucket,
//
//	route,bucket_us,calls,censored,excluded_5xx
//	/api/orders,31424,17,0,0
//
// bucket_us is the lowest value of an HDR bucket of 3 significant digits
// in microseconds (histogram.BucketLowerMicros), calls the rows in it,
// censored those the status rule censors, excluded_<class> those it
// leaves out, by status class, and folded_groups, when not 0, that the
// row is of the group the engine folded that many groups beyond
// --max-groups into. window_start, when there, is the window of the
// row's calls: the Unix second it starts at (tunetimeout clickhouse
// --window), NULL (\N) or empty for calls without a time. Every other
// column is a group column: the
// group is their values joined by " ", as --by joins a log's keys. A row
// read this way fills the histogram exactly as its calls read one by one
// would.

// Columns of the buckets format.
const (
	BucketsBucketColumn   = "bucket_us"
	BucketsCallsColumn    = "calls"
	BucketsCensoredColumn = "censored"
	BucketsExcludedPrefix = "excluded_"
	// BucketsSecondColumn holds, instead of bucket_us, the second (Unix
	// time) of the calls of rows of arrivals (tunetimeout sql --arrivals),
	// for the rates.
	BucketsSecondColumn = "second"
	// BucketsFoldedColumn, when not 0, says the row's group is the one
	// the engine folded the groups beyond --max-groups into, and how many
	// groups it folded (tunetimeout sql --max-groups).
	BucketsFoldedColumn = "folded_groups"
	// BucketsRouteTargetColumn is a group column of request targets, as
	// logged ("/users/42?x=1"): the reader makes their routes, as --by
	// route does for a log (NormalizeRoute, --route-pattern), and rows of
	// one route add up (tunetimeout sql --by 'route(COL)').
	BucketsRouteTargetColumn = "route_target"
	// BucketsWindowColumn holds the window of a row's calls, the Unix
	// second it starts at, a whole multiple of the window's length since
	// the epoch as --window makes them (tunetimeout clickhouse --window).
	BucketsWindowColumn = "window_start"
)

// BucketRow is one row of buckets.
type BucketRow struct {
	Group string
	// Arrivals: the row counts the calls that arrived in Second, for the
	// rates, rather than the calls of a bucket.
	Arrivals bool
	Second   int64
	BucketUS int64
	// Calls counts every call of the row; Censored and Excluded (by
	// reason, "status 5xx") are among them.
	Calls, Censored int64
	Excluded        map[string]int64
	// FoldedGroups, when more than 0, says the row's group is the one
	// the engine folded the groups beyond its --max-groups into, and how
	// many groups that is (Group is then "").
	FoldedGroups int64
	// Windowed says the answer has a BucketsWindowColumn; then Timed
	// says the row's calls have a time and Window is the Unix second
	// their window starts at.
	Windowed, Timed bool
	Window          int64
}

// ReadBuckets reads buckets and calls row with every row (valid until the
// call returns) and bad with every bad one (*ParseError); an error of
// either ends the reading and is returned, and so is a read error.
//
// routePatterns are the user's own routes (--route-pattern), tried before
// NormalizeRoute on the targets of a BucketsRouteTargetColumn.
func ReadBuckets(r io.Reader, name string, routePatterns []string, row func(*BucketRow) error, bad func(error) error) error {
	next, header, jsonLine, err := bucketRecords(r, name)
	if err != nil {
		return err
	}
	c := newBucketColumns(header)
	var routes *Grouper
	if c.target >= 0 {
		var err error
		if routes, err = NewGrouper([]string{"route"}, routePatterns); err != nil {
			return err
		}
	}
	var fields Fields
	var sample Sample
	if (c.bucket < 0) == (c.second < 0) || c.calls < 0 {
		return fmt.Errorf("%s:1: the header has no %s (or %s) and %s columns (the columns tunetimeout sql's queries name): %q", name, BucketsBucketColumn, BucketsSecondColumn, BucketsCallsColumn, strings.Join(header, ","))
	}
	var br2 BucketRow
	var g []string
	line := 1 // the header's
	for {
		line++
		rec, err := next()
		if jsonLine != nil {
			line = *jsonLine
		}
		if err == io.EOF {
			return nil
		}
		badRow := func(field, value, reason string) error {
			return bad(&ParseError{File: name, Line: line, Field: field, Value: displayValue(value), Reason: reason, Kind: "column"})
		}
		var pe *csv.ParseError
		var je *badJSONRow
		if errors.As(err, &pe) || errors.As(err, &je) {
			reason := ""
			if pe != nil {
				reason = pe.Err.Error()
			} else {
				reason = je.reason
			}
			if err := bad(&ParseError{File: name, Line: line, Reason: reason}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if len(rec) != len(header) {
			if err := bad(&ParseError{File: name, Line: line, Reason: fmt.Sprintf("has %d columns, the header %d", len(rec), len(header))}); err != nil {
				return err
			}
			continue
		}
		if ok, err := c.parse(rec, header, &br2, badRow); err != nil {
			return err
		} else if !ok {
			continue
		}
		g = g[:0]
		if br2.FoldedGroups > 0 {
			br2.Group = ""
			if err := row(&br2); err != nil {
				return err
			}
			continue
		}
		for _, i := range c.groups {
			v := rec[i]
			if i == c.target {
				// The route of a request target, as a log's --by route
				// makes it: rows of one route add up.
				fields.Path = append(fields.Path[:0], v...)
				v = routes.Key(&sample, &fields)
			}
			g = append(g, names.Value(v))
		}
		br2.Group = names.Cap(strings.Join(g, " "))
		if err := row(&br2); err != nil {
			return err
		}
	}
}

// bucketRecords opens buckets as CSV or TSV, or as JSON lines when the
// first line is an object, and reads the header: next returns each row
// after it, as its columns. jsonLine, for JSON lines, is the line of the
// row next returned last.
func bucketRecords(r io.Reader, name string) (next func() ([]string, error), header []string, jsonLine *int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(1)
	if len(head) == 0 {
		if err == io.EOF {
			return nil, nil, nil, fmt.Errorf("%s: %w", name, ErrEmptyInput)
		}
		return nil, nil, nil, err
	}
	first, _ := br.Peek(4096)
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	var err2 error
	if t := bytes.TrimLeft(first, " \t\ufeff"); len(t) > 0 && t[0] == '{' {
		jsonLine = new(int)
		next, header, err2 = jsonBucketRows(br, name, jsonLine)
	} else {
		cr := csv.NewReader(br)
		if bytes.IndexByte(first, '\t') >= 0 {
			cr.Comma = '\t'
		}
		cr.ReuseRecord = true
		cr.FieldsPerRecord = -1
		next = cr.Read
		header, err2 = cr.Read()
		if err2 != nil {
			err2 = fmt.Errorf("%s:1: the header: %v", name, err2)
		}
	}
	if err2 != nil {
		return nil, nil, nil, err2
	}
	header = slices.Clone(header) // ReuseRecord: the next Read writes over it
	return next, header, jsonLine, nil
}

// bucketColumns are the places of the buckets format's columns in a
// header, -1 for those it has not: the group columns in order, and the
// excluded counts by their reason ("status 5xx").
type bucketColumns struct {
	bucket, calls, censored, second, folded, target, window int
	groups                                                  []int
	excluded                                                map[int]string
}

// newBucketColumns finds the columns of header.
func newBucketColumns(header []string) *bucketColumns {
	c := &bucketColumns{bucket: -1, calls: -1, censored: -1, second: -1, folded: -1, target: -1, window: -1,
		excluded: map[int]string{}}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		switch {
		case h == BucketsBucketColumn:
			c.bucket = i
		case h == BucketsCallsColumn:
			c.calls = i
		case h == BucketsSecondColumn:
			c.second = i
		case h == BucketsCensoredColumn:
			c.censored = i
		case h == BucketsFoldedColumn:
			c.folded = i
		case h == BucketsWindowColumn:
			c.window = i
		case strings.HasPrefix(h, BucketsExcludedPrefix):
			c.excluded[i] = "status " + strings.TrimPrefix(h, BucketsExcludedPrefix)
		default:
			if h == BucketsRouteTargetColumn {
				c.target = i
			}
			c.groups = append(c.groups, i)
		}
	}
	return c
}

// parse reads the numbers of rec, a row of as many columns as header,
// into br2 (its group aside): false when one is bad, which it reports to
// badRow, whose error it returns.
func (c *bucketColumns) parse(rec, header []string, br2 *BucketRow, badRow func(field, value, reason string) error) (bool, error) {
	num := func(i int) (int64, bool) {
		v, err := strconv.ParseInt(strings.TrimSpace(rec[i]), 10, 64)
		return v, err == nil && v >= 0
	}
	*br2 = BucketRow{Excluded: br2.Excluded}
	clear(br2.Excluded)
	var ok bool
	if c.second >= 0 {
		br2.Arrivals = true
		v, err := strconv.ParseInt(strings.TrimSpace(rec[c.second]), 10, 64)
		if err != nil || v < 0 || v > maxUnixSecond {
			return false, badRow(header[c.second], rec[c.second], "is not a second of Unix time from 1970 to 2262")
		}
		br2.Second = v
	}
	if c.window >= 0 {
		br2.Windowed = true
		if v := strings.TrimSpace(rec[c.window]); v != "" && v != `\N` {
			w, err := strconv.ParseInt(v, 10, 64)
			if err != nil || w < 0 || w > maxUnixSecond {
				return false, badRow(header[c.window], rec[c.window], "is not a second of Unix time from 1970 to 2262")
			}
			br2.Timed, br2.Window = true, w
		}
	}
	if c.second < 0 {
		if br2.BucketUS, ok = num(c.bucket); !ok {
			return false, badRow(header[c.bucket], rec[c.bucket], "is not a whole number of microseconds, 0 or more")
		}
	}
	if br2.Calls, ok = num(c.calls); !ok {
		return false, badRow(header[c.calls], rec[c.calls], "is not a count")
	}
	sum := int64(0)
	if c.censored >= 0 {
		if br2.Censored, ok = num(c.censored); !ok {
			return false, badRow(header[c.censored], rec[c.censored], "is not a count")
		}
		sum += br2.Censored
	}
	for _, i := range slices.Sorted(maps.Keys(c.excluded)) {
		n, ok := num(i)
		if !ok {
			return false, badRow(header[i], rec[i], "is not a count")
		}
		if n > 0 {
			if br2.Excluded == nil {
				br2.Excluded = map[string]int64{}
			}
			br2.Excluded[c.excluded[i]] += n
			sum += n
		}
	}
	if c.folded >= 0 {
		if br2.FoldedGroups, ok = num(c.folded); !ok {
			return false, badRow(header[c.folded], rec[c.folded], "is not a count")
		}
	}
	if sum > br2.Calls {
		return false, badRow(header[c.calls], rec[c.calls], fmt.Sprintf("is fewer than the censored and excluded calls, %d", sum))
	}
	return true, nil
}

// maxBucketLine bounds one JSON line of buckets: a row of a few group
// values and counts.
const maxBucketLine = 1 << 20

// badJSONRow is a JSON line of buckets that is not an object of values.
type badJSONRow struct{ reason string }

func (e *badJSONRow) Error() string { return e.reason }

// jsonBucketRows reads buckets as JSON lines (ClickHouse's JSONEachRow,
// BigQuery's and DuckDB's JSON exports): one object per line, its keys
// the columns, the first line's keys in their order the header. Values
// are strings, numbers (ClickHouse quotes 64-bit integers: both are read),
// booleans or null (""). A later line's keys are matched by name; one
// with a key the header lacks, or a nested value, is a bad row.
func jsonBucketRows(br *bufio.Reader, name string, lineNo *int) (next func() ([]string, error), header []string, err error) {
	readLine := func() ([]byte, error) {
		*lineNo++
		var line []byte
		for {
			chunk, err := br.ReadSlice('\n')
			if line == nil && err != bufio.ErrBufferFull {
				return chunk, err // the usual line, within the buffer: no copy (valid until the next read)
			}
			line = append(line, chunk...)
			if len(line) > maxBucketLine {
				return nil, fmt.Errorf("%s:%d: a line longer than %d bytes: not buckets", name, *lineNo, maxBucketLine)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && len(line) > 0 {
				return line, nil
			}
			return line, err
		}
	}
	first, err := readLine()
	if err != nil && err != io.EOF {
		return nil, nil, err
	}
	header, values, err := parseJSONBucketRow(bytes.TrimPrefix(first, []byte("\ufeff")))
	if err != nil {
		return nil, nil, fmt.Errorf("%s:1: %v", name, err)
	}
	index := map[string]int{}
	for i, k := range header {
		index[k] = i
	}
	pending := values
	rec := make([]string, len(header))
	next = func() ([]string, error) {
		if pending != nil { // the first line: a row as well as the header
			r := pending
			pending = nil
			return r, nil
		}
		var line []byte
		for len(bytes.TrimSpace(line)) == 0 {
			l, err := readLine()
			if err != nil && (err != io.EOF || len(l) == 0) {
				return nil, err
			}
			line = l
		}
		keys, values, err := parseJSONBucketRow(line)
		if err != nil {
			return nil, err
		}
		clear(rec)
		for i, k := range keys {
			j, ok := index[k]
			if !ok {
				return nil, &badJSONRow{fmt.Sprintf("has the column %q, which the first line has not", k)}
			}
			rec[j] = values[i]
		}
		return rec, nil
	}
	return next, header, nil
}

// parseJSONBucketRow reads a JSON line of buckets: the keys of its object
// and their values as text, in order.
func parseJSONBucketRow(line []byte) (keys, values []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	invalid := func(err error) error {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return &badJSONRow{"is a JSON object cut off"}
		}
		return &badJSONRow{"is not valid JSON: " + err.Error()}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, &badJSONRow{"is not a JSON object"}
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, nil, invalid(err)
		}
		v, err := dec.Token()
		if err != nil {
			return nil, nil, invalid(err)
		}
		var text string
		switch v := v.(type) {
		case string:
			text = v
		case json.Number:
			text = v.String()
		case bool:
			text = strconv.FormatBool(v)
		case nil:
		default:
			return nil, nil, &badJSONRow{fmt.Sprintf("the value of %q is not a string, number, boolean or null", k)}
		}
		keys, values = append(keys, k.(string)), append(values, text)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, invalid(err)
	}
	if len(bytes.TrimSpace(line[dec.InputOffset():])) > 0 {
		return nil, nil, &badJSONRow{"has more after its JSON object"}
	}
	return keys, values, nil
}

// maxUnixSecond is the last second a time.Duration reaches from 1970.
const maxUnixSecond = 9_223_372_036

// sniffBuckets accepts a header with bucket_us (or second) and calls, or
// a JSON line with those keys.
func sniffBuckets(line []byte) bool {
	if t := bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\ufeff"))); len(t) > 0 && t[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) != nil {
			return false
		}
		_, bucket := m[BucketsBucketColumn]
		_, second := m[BucketsSecondColumn]
		_, calls := m[BucketsCallsColumn]
		return (bucket || second) && calls
	}
	fields := strings.FieldsFunc(string(line), func(r rune) bool { return r == ',' || r == '\t' })
	for i, f := range fields {
		fields[i] = strings.Trim(strings.TrimSpace(f), `"`) // ClickHouse's CSVWithNames quotes its header
	}
	return (slices.Contains(fields, BucketsBucketColumn) || slices.Contains(fields, BucketsSecondColumn)) && slices.Contains(fields, BucketsCallsColumn)
}

func init() {
	Register(Format{
		Name:       "buckets",
		Priority:   65, // a CSV header of its own, before csv's
		Summary:    "HDR buckets a SQL engine computed (tunetimeout sql): group columns, bucket_us, calls, censored, excluded_<class>",
		Sniff:      sniffBuckets,
		HDRBuckets: true,
	})
}
