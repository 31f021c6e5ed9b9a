package ingest

import (
	"io"
	"time"
)

// CSVOptions select the columns of a CSV input.
type CSVOptions struct {
	Column       string        // latency column; "" = the first well-known name found
	Unit         time.Duration // unit of the latency column; 0 = from the column name's suffix
	TimeColumn   string        // timestamp column; "" = detect ("timestamp", "time", "ts", "date")
	StatusColumn string        // status column; "" = detect ("status", "status_code", "code")
	By           []string      // group-by columns, in order
}

// NewCSV reads the header of r (named name in errors; "-" for stdin) and
// returns a streaming decoder over the remaining rows.
func NewCSV(r io.Reader, name string, o CSVOptions) (Decoder, error) { panic("unimplemented") }
