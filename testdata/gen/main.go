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
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
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
	format := fs.String("format", "csv", "csv, or nginx: an nginx access log of n lines (fast 500s among them)")
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
	return fmt.Errorf("-format %q: csv or nginx", *format)
}
