// Command gen writes a synthetic access log in CSV drawn from the mixture
// model of docs/method.md#12-the-worked-example (see package internal/mixture):
//
//	go run ./testdata/gen -n 200000 -seed 1 -rate 400 -start 2026-11-02T10:00:00Z > testdata/mixture.csv
//
// With -format nginx it writes an nginx access log in the combined format
// plus " $request_time $upstream_response_time" instead, streamed as it is
// made (bench/compare.sh writes 2,000,000 lines, about 300 MB, this way):
//
//	go run ./testdata/gen -format nginx -n 2000000 -seed 1 > access.log
//
// With -format json it writes the rows of the CSV as JSON lines instead,
// one object per row with the path of a request (the route and a numeric
// id), read with --input jsonl --field latency_ms --unit ms --time-field
// time --status-field status --path-field path --method-field method:
//
//	{"time":"2026-11-02T10:00:00.005Z","level":"info","method":"GET","path":"/api/orders/1","status":200,"latency_ms":31.466}
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/mixture"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 200000, "number of samples (200 rows; about 0.5 % extra fast 500 rows are added)")
	seed := fs.Uint64("seed", 1, "random seed")
	rate := fs.Float64("rate", 400, "mean arrival rate, calls per second")
	startFlag := fs.String("start", "2026-11-02T10:00:00Z", "time of the first arrival's origin, RFC 3339")
	format := fs.String("format", "csv", "csv; nginx: an nginx access log of n lines (fast 500s among them); json: the CSV's rows as JSON lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *n < 0 {
		return fmt.Errorf("-n %d: must not be negative", *n)
	}
	start, err := time.Parse(time.RFC3339, *startFlag)
	if err != nil {
		return fmt.Errorf("-start: %w", err)
	}
	switch *format {
	case "csv":
		samples := mixture.Default().Generate(*seed, *n)
		return mixture.WriteCSV(stdout, samples, start, *rate, *seed)
	case "json":
		samples := mixture.Default().Generate(*seed, *n)
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(mixture.WriteCSV(pw, samples, start, *rate, *seed)) }()
		err := csvToJSON(stdout, pr)
		pr.CloseWithError(io.ErrClosedPipe) // the writer stops if the reader did
		return err
	case "nginx":
		if !(*rate > 0) || math.IsInf(*rate, 1) {
			return fmt.Errorf("-rate %v calls/s: must be positive and finite", *rate)
		}
		w := bufio.NewWriterSize(stdout, 1<<20)
		if _, err := io.Copy(w, mixture.Default().NewNginxLog(*seed, *n, start, *rate)); err != nil {
			return err
		}
		return w.Flush()
	}
	return fmt.Errorf("-format %q: csv, nginx or json", *format)
}

// csvToJSON writes the rows of WriteCSV's output (timestamp, route, status,
// latency_ms) as JSON lines. Row i's path is its route and the id
// (i*7919)%100000: --by route reads the route back as ROUTE/{id}.
func csvToJSON(w io.Writer, r io.Reader) error {
	sc := bufio.NewScanner(r)
	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	for i := -1; sc.Scan(); i++ {
		if i < 0 {
			continue // the header
		}
		f := bytes.Split(sc.Bytes(), []byte(","))
		if len(f) != 4 {
			return fmt.Errorf("row %d: %d fields, want 4", i+1, len(f))
		}
		method := "GET"
		if i%10 == 9 {
			method = "POST"
		}
		line = append(line[:0], `{"time":"`...)
		line = append(line, f[0]...)
		line = append(line, `","level":"info","method":"`...)
		line = append(line, method...)
		line = append(line, `","path":"`...)
		line = append(line, f[1]...)
		line = append(line, '/')
		line = strconv.AppendInt(line, int64(i*7919%100000), 10)
		line = append(line, `","status":`...)
		line = append(line, f[2]...)
		line = append(line, `,"latency_ms":`...)
		line = append(line, f[3]...)
		line = append(line, "}\n"...)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return bw.Flush()
}
