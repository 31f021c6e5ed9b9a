package analysis

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/report"
)

// script is a source that yields its records, or their errors, in turn.
type script struct {
	recs  []any // int: a good record; error: what Next returns
	calls int
}

func (s *script) Next() (int, error) {
	if s.calls == len(s.recs) {
		return 0, io.EOF
	}
	s.calls++
	switch r := s.recs[s.calls-1].(type) {
	case error:
		return 0, r
	default:
		return r.(int), nil
	}
}

func parseErr(line int) error {
	return &ingest.ParseError{File: "f", Line: line, Field: "request_time", Value: "x", Reason: "is not a number"}
}

func notRequest(line int, reason string) error {
	return &ingest.NotRequestError{File: "f", Line: line, Reason: reason}
}

// TestDrain pins what the one reading loop does with each kind of record,
// for the serial reader, the workers and the interval-log reader alike.
func TestDrain(t *testing.T) {
	readErr := errors.New("read: connection reset")
	keepErr := errors.New("from keep")
	tests := []struct {
		name        string
		recs        []any
		strict      bool
		keepFails   int // keep fails on this good record; 0: never
		wantErr     error
		wantStrict  string // the error's text, under --strict
		wantKept    []int
		wantRecords int64 // the bad ones: keep counts the good
		wantBad     int64
		wantEx      []string
		wantNotReq  map[string]int64
	}{
		{
			name: "bad records counted, the first few quoted in order; not requests apart",
			recs: []any{1, parseErr(2), notRequest(3, "haproxy proxy started"), 4, parseErr(5), parseErr(6),
				notRequest(7, "haproxy proxy started"), notRequest(8, "haproxy server state"), parseErr(9), 10},
			wantKept: []int{1, 4, 10}, wantRecords: 4, wantBad: 4,
			wantEx:     []string{parseErr(2).Error(), parseErr(5).Error(), parseErr(6).Error()},
			wantNotReq: map[string]int64{"haproxy proxy started": 2, "haproxy server state": 1},
		},
		{
			name:   "--strict: the first bad record ends the reading, counted, not quoted",
			recs:   []any{1, notRequest(2, "caddy log message"), parseErr(3), 4},
			strict: true, wantStrict: `f:3: field "request_time": "x" is not a number (--strict)`,
			wantKept: []int{1}, wantRecords: 1, wantBad: 1, wantNotReq: map[string]int64{"caddy log message": 1},
		},
		{
			name:    "a read error ends the reading, not counted",
			recs:    []any{1, parseErr(2), readErr, 4},
			wantErr: readErr, wantKept: []int{1}, wantRecords: 1, wantBad: 1, wantEx: []string{parseErr(2).Error()},
		},
		{
			name:      "keep's error ends the reading",
			recs:      []any{1, 2, 3},
			keepFails: 2, wantErr: keepErr, wantKept: []int{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &report.Input{BadExamples: []string{}}
			o := &Options{Strict: tt.strict, ShowErrors: 3}
			var kept []int
			err := drainInto(context.Background(), drain{in: in, o: o, every: everyRecords}, &script{recs: tt.recs}, func(r int) error {
				kept = append(kept, r)
				if len(kept) == tt.keepFails {
					return keepErr
				}
				return nil
			})
			switch {
			case tt.wantStrict != "":
				require.Error(t, err)
				assert.Equal(t, tt.wantStrict, err.Error())
				var pe *ingest.ParseError
				assert.True(t, errors.As(err, &pe), "the ParseError is wrapped")
			case tt.wantErr != nil:
				assert.ErrorIs(t, err, tt.wantErr)
			default:
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.wantKept, kept)
			assert.Equal(t, tt.wantRecords, in.Records)
			assert.Equal(t, tt.wantBad, in.BadRecords)
			if tt.wantEx == nil {
				tt.wantEx = []string{}
			}
			assert.Equal(t, tt.wantEx, in.BadExamples)
			assert.Equal(t, tt.wantNotReq, in.NotRequests)
		})
	}
}

// TestDrainLooksAtTheContextEveryN: the context is looked at before the
// first record and then every `every` records, bad ones included: a
// cancellation ends the reading at the next look, not at once, and not
// later.
func TestDrainLooksAtTheContextEveryN(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	recs := []any{1, parseErr(2), 3, 4, 5, 6, 7, 8, 9, 10}
	src := &script{recs: recs}
	in := &report.Input{}
	err := drainInto(ctx, drain{in: in, o: &Options{ShowErrors: 5}, every: 4}, src, func(r int) error {
		if r == 3 {
			cancel()
		}
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 4, src.calls, "records 1 to 4 read, the look before the 5th sees the cancellation")

	src = &script{recs: recs}
	err = drainInto(ctx, drain{in: in, o: &Options{}, every: 4}, src, func(int) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, src.calls, "a cancelled context reads nothing")
}

// progressCounts records what Records was told.
type progressCounts struct{ told []int64 }

func (p *progressCounts) Begin(int64)     {}
func (p *progressCounts) Read(int)        {}
func (p *progressCounts) Records(n int64) { p.told = append(p.told, n) }
func (p *progressCounts) End()            {}

// TestDrainProgress: the serial reader's progress is told the records at
// each look; a worker's drain (progress false) tells nothing, though its
// Options carry the run's Progress.
func TestDrainProgress(t *testing.T) {
	recs := []any{1, 2, 3, 4, 5}
	for _, told := range []bool{true, false} {
		p := &progressCounts{}
		in := &report.Input{}
		err := drainInto(context.Background(), drain{in: in, o: &Options{Progress: p}, every: 2, progress: told}, &script{recs: recs},
			func(int) error { in.Records++; return nil })
		require.NoError(t, err)
		if told {
			assert.Equal(t, []int64{0, 2, 4}, p.told)
		} else {
			assert.Empty(t, p.told)
		}
	}
}
