package analysis

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
)

// records yields the records of one input or chunk, io.EOF at the end: an
// ingest.Decoder's samples, a histogram.LogReader's intervals.
type records[T any] interface {
	Next() (T, error)
}

// drain is how the one reading loop (drainInto) treats what it reads: the
// serial reader, the parallel workers (one chunk at a time) and the
// interval-log reader read through it alike.
type drain struct {
	// in counts the bad records (badRecord: in Records and BadRecords,
	// the first few quoted in BadExamples) and the lines that are not
	// requests (NotRequests). Good records are the keeper's to count.
	in *report.Input
	o  *Options // Strict and ShowErrors
	// every is how many records are read between two looks at the
	// context: a look costs little, but not nothing on every line.
	every int
	// progress: o.Progress, when set, is told in.Records at each look
	// (by the one goroutine that reads serially). A bool, not a Progress:
	// an interface called through d would move in and o to the heap,
	// an allocation per chunk.
	progress bool
}

// Between two looks at the context: lines of logs and CSV, intervals of
// interval logs (each of which holds many calls).
const (
	everyRecords   = 4096
	everyIntervals = 1024
)

// drainInto reads src to its end, handing each good record to keep, and
// each bad one to badRecord. It returns nil at io.EOF, or the error that
// ends the reading: the context's, a read error, a bad record under
// --strict, or keep's.
func drainInto[T any](ctx context.Context, d drain, src records[T], keep func(T) error) error {
	// A countdown, not n%every: every is not a constant.
	for left := 0; ; left-- {
		if left == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.progress && d.o.Progress != nil {
				d.o.Progress.Records(d.in.Records)
			}
			left = d.every
		}
		rec, err := src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if err := badRecord(err, d.o, d.in); err != nil {
				return err
			}
			continue
		}
		if err := keep(rec); err != nil {
			return err
		}
	}
}

// badRecord counts the bad record err reports in in, quoting the first
// few; a line that is not a request (*ingest.NotRequestError) is counted
// by what it is, never bad, even under --strict. It returns the error that
// ends the reading: err itself when it is not an *ingest.ParseError (a
// read error), or err under --strict.
func badRecord(err error, o *Options, in *report.Input) error {
	// pe is declared here, not in the callers' loops: errors.As moves it to
	// the heap, which would cost an allocation on every line.
	var nr *ingest.NotRequestError
	if errors.As(err, &nr) {
		addNotRequests(in, nr.Reason, 1)
		return nil
	}
	var pe *ingest.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	in.Records++
	in.BadRecords++
	if o.Strict {
		return fmt.Errorf("%w (%s)", err, usage.Strict)
	}
	if len(in.BadExamples) < o.ShowErrors {
		in.BadExamples = append(in.BadExamples, pe.Error())
	}
	return nil
}

// counted counts the good sample s among the records of in and takes an
// odd time off it (dropOddTime, the first kept in timeExample); it reports
// whether s lies in --from/--to, counting it outside when not.
func (o *Options) counted(s *ingest.Sample, in *report.Input, timeExample *string) bool {
	in.Records++
	dropOddTime(s, &in.TimesOutOfRange, timeExample)
	if !o.inRange(s.Time) {
		in.OutsideRange++
		return false
	}
	return true
}

// addCounts adds the counts of c, what a part of the input gave (a chunk,
// a summary's trailer), to in, and its bad examples while fewer than
// showErrors are quoted.
func addCounts(in *report.Input, c *report.Input, showErrors int) {
	in.Records += c.Records
	in.BadRecords += c.BadRecords
	in.OutsideRange += c.OutsideRange
	in.TimesOutOfRange += c.TimesOutOfRange
	for reason, n := range c.NotRequests {
		addNotRequests(in, reason, n)
	}
	for _, e := range c.BadExamples {
		if len(in.BadExamples) < showErrors {
			in.BadExamples = append(in.BadExamples, e)
		}
	}
}
