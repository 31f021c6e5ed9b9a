package histogram

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tunetimeout/tunetimeout/ingest"
)

// FuzzLogReader feeds the interval log reader arbitrary text: it must not
// panic, must end, must report every bad line as an *ingest.ParseError at
// a line of the input, and what it accepts must be counts a set can take.
func FuzzLogReader(f *testing.F) {
	s := NewSet()
	s.Every(time.Minute)
	for i := range 30 { // a small log: the fuzzer minimises what it finds
		at := time.Unix(1_800_000_000+int64(i*7), 0)
		c := s.Group([]string{"a", "b c"}[i%2]).Cell(at)
		c.Record(time.Duration(i) * time.Millisecond)
		c.Arrive(at.Unix(), 1)
		if i%9 == 0 {
			c.RecordCensored(time.Second)
			c.RecordConnect(time.Millisecond)
			c.Exclude("5xx")
		}
	}
	var own bytes.Buffer
	if err := WriteLog(&own, s, map[string]int{"records": 30}); err != nil {
		f.Fatal(err)
	}
	f.Add(own.String())
	f.Add("#[StartTime: 1441812279.474 (seconds since epoch)]\n0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=\n")
	f.Add("Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=\n")
	f.Add(logMarker + "]\n" + cellPrefix + `{"tag":"a","start":60,"arrivals":[0,1]}]` + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Count(text, "\n") + 1
		lr := NewLogReader(strings.NewReader(text), "f.hlog")
		set := NewSet()
		set.Every(time.Minute)
		for range lines + 2 {
			e, err := lr.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var pe *ingest.ParseError
				if !errors.As(err, &pe) {
					if strings.Contains(err.Error(), "longer than") {
						return
					}
					t.Fatalf("not a ParseError: %v", err)
				}
				if pe.File != "f.hlog" || pe.Line < 1 || pe.Line > lines {
					t.Fatalf("error at line %d of %d: %v", pe.Line, lines, err)
				}
				continue
			}
			if e.Input != nil {
				continue
			}
			if e.Cell == nil || e.Cell.Count() < 0 || e.Cell.Below < 0 || e.Cell.Above < 0 {
				t.Fatalf("entry at line %d: bad cell %+v", e.Line, e.Cell)
			}
			set.Group(e.Tag).AddCell(e.Cell)
		}
		t.Fatalf("reader did not end after %d lines", lines)
	})
}
