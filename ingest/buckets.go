package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
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
// leaves out, by status class. Every other column is a group column: the
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
}

// ReadBuckets reads buckets and calls row with every row (valid until the
// call returns) and bad with every bad one (*ParseError); an error of
// either ends the reading and is returned, and so is a read error.
func ReadBuckets(r io.Reader, name string, row func(*BucketRow) error, bad func(error) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(1)
	if len(head) == 0 {
		if err == io.EOF {
			return fmt.Errorf("%s: %w", name, ErrEmptyInput)
		}
		return err
	}
	first, _ := br.Peek(4096)
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	cr := csv.NewReader(br)
	if bytes.IndexByte(first, '\t') >= 0 {
		cr.Comma = '\t'
	}
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s:1: the header: %v", name, err)
	}
	header = slices.Clone(header) // ReuseRecord: the next Read writes over it
	bucket, calls, censored, second := -1, -1, -1, -1
	var groups []int
	excluded := map[int]string{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		switch {
		case h == BucketsBucketColumn:
			bucket = i
		case h == BucketsCallsColumn:
			calls = i
		case h == BucketsSecondColumn:
			second = i
		case h == BucketsCensoredColumn:
			censored = i
		case strings.HasPrefix(h, BucketsExcludedPrefix):
			excluded[i] = "status " + strings.TrimPrefix(h, BucketsExcludedPrefix)
		default:
			groups = append(groups, i)
		}
	}
	if (bucket < 0) == (second < 0) || calls < 0 {
		return fmt.Errorf("%s:1: the header has no %s (or %s) and %s columns (the columns tunetimeout sql's queries name): %q", name, BucketsBucketColumn, BucketsSecondColumn, BucketsCallsColumn, strings.Join(header, ","))
	}
	var br2 BucketRow
	var g []string
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		badRow := func(field, value, reason string) error {
			return bad(&ParseError{File: name, Line: line, Field: field, Value: displayValue(value), Reason: reason, Kind: "column"})
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			if err := bad(&ParseError{File: name, Line: line, Reason: pe.Err.Error()}); err != nil {
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
		num := func(i int) (int64, bool) {
			v, err := strconv.ParseInt(strings.TrimSpace(rec[i]), 10, 64)
			return v, err == nil && v >= 0
		}
		br2 = BucketRow{Excluded: br2.Excluded}
		clear(br2.Excluded)
		var ok bool
		if second >= 0 {
			br2.Arrivals = true
			v, err := strconv.ParseInt(strings.TrimSpace(rec[second]), 10, 64)
			if err != nil || v < 0 || v > maxUnixSecond {
				if err := badRow(header[second], rec[second], "is not a second of Unix time from 1970 to 2262"); err != nil {
					return err
				}
				continue
			}
			br2.Second = v
		} else if br2.BucketUS, ok = num(bucket); !ok {
			if err := badRow(header[bucket], rec[bucket], "is not a whole number of microseconds, 0 or more"); err != nil {
				return err
			}
			continue
		}
		if br2.Calls, ok = num(calls); !ok {
			if err := badRow(header[calls], rec[calls], "is not a count"); err != nil {
				return err
			}
			continue
		}
		sum := int64(0)
		if censored >= 0 {
			if br2.Censored, ok = num(censored); !ok {
				if err := badRow(header[censored], rec[censored], "is not a count"); err != nil {
					return err
				}
				continue
			}
			sum += br2.Censored
		}
		good := true
		for _, i := range slices.Sorted(maps.Keys(excluded)) {
			n, ok := num(i)
			if !ok {
				good = false
				if err := badRow(header[i], rec[i], "is not a count"); err != nil {
					return err
				}
				break
			}
			if n > 0 {
				if br2.Excluded == nil {
					br2.Excluded = map[string]int64{}
				}
				br2.Excluded[excluded[i]] += n
				sum += n
			}
		}
		if !good {
			continue
		}
		if sum > br2.Calls {
			if err := badRow(header[calls], rec[calls], fmt.Sprintf("is fewer than the censored and excluded calls, %d", sum)); err != nil {
				return err
			}
			continue
		}
		g = g[:0]
		for _, i := range groups {
			v := rec[i]
			if v == "" {
				v = "-"
			}
			g = append(g, v)
		}
		br2.Group = strings.Join(g, " ")
		if err := row(&br2); err != nil {
			return err
		}
	}
}

// maxUnixSecond is the last second a time.Duration reaches from 1970.
const maxUnixSecond = 9_223_372_036

// sniffBuckets accepts a header with bucket_us (or second) and calls.
func sniffBuckets(line []byte) bool {
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
