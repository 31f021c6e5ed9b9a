// Command gendays writes testdata/days.csv, the small input of the golden
// scripts (testdata/script): four days from 2026-11-02T00:00:00Z, a call
// of /api/orders (median 40 ms) and one of /api/users (12 ms) every five
// minutes, both 2.5 times slower from 09:00 to 17:00, 2 % of calls eight
// times slower, 1 % answered 503; a fixed linear congruential generator
// (glibc's constants) makes the same bytes everywhere:
//
//	go run ./testdata/gendays > testdata/days.csv
package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	x := uint64(12345)
	rnd := func() float64 {
		x = (1103515245*x + 12345) % (1 << 31)
		return float64(x) / (1 << 31)
	}
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	fmt.Fprintln(w, "timestamp,route,status,latency_ms")
	for i := range 4 * 24 * 12 {
		t := t0.Add(time.Duration(i) * 5 * time.Minute)
		busy := 1.0
		if t.Hour() >= 9 && t.Hour() < 17 {
			busy = 2.5
		}
		for _, r := range []struct {
			route string
			base  float64
		}{{"/api/orders", 40}, {"/api/users", 12}} {
			lat := r.base * busy * (0.5 + rnd())
			if rnd() < 0.02 {
				lat *= 8
			}
			status := 200
			if rnd() < 0.01 {
				status = 503
			}
			at := t.Add(time.Duration(int(rnd()*1000)) * time.Millisecond)
			fmt.Fprintf(w, "%s,%s,%d,%.3f\n", at.Format("2006-01-02T15:04:05.000Z"), r.route, status, lat)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
