package analysis

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Progress that remembers what it was told.
type recorder struct {
	begins  []int64
	read    int64
	records int64
	ends    int
}

func (r *recorder) Begin(total int64) { r.begins = append(r.begins, total) }
func (r *recorder) Read(n int)        { r.read += int64(n) }
func (r *recorder) Records(n int64)   { r.records = n }
func (r *recorder) End()              { r.ends++ }

func TestProgressCountsTheFilesAsStored(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("latency_ms\n")
	for i := range 10_000 {
		fmt.Fprintf(&csv, "%d\n", 10+i%50)
	}
	plain := writeFile(t, "a.csv", csv.String())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(csv.String()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	compressed := filepath.Join(t.TempDir(), "b.csv.gz")
	require.NoError(t, os.WriteFile(compressed, gz.Bytes(), 0o644))

	var p recorder
	o := options(plain, compressed)
	o.Progress = &p
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	size := int64(len(csv.String()) + gz.Len())
	assert.Equal(t, []int64{size}, p.begins, "Begin once, with the sizes on disk")
	assert.Equal(t, size, p.read, "the bytes read add up to that size: the .gz counts compressed")
	assert.Equal(t, int64(20_000), r.Input.Records, "data rows; headers are not records")
	assert.Greater(t, p.records, int64(0))
	assert.LessOrEqual(t, p.records, r.Input.Records)
	assert.GreaterOrEqual(t, p.ends, 1)
	assert.Equal(t, int64(20_000), r.Groups[0].Samples, "progress changes nothing in the result")
}

func TestProgressUnknownSizeFromAPipe(t *testing.T) {
	var p recorder
	o := options("-")
	o.Progress = &p
	_, err := Run(context.Background(), o, strings.NewReader("latency_ms\n12\n15\n"))
	require.NoError(t, err)
	assert.Equal(t, []int64{-1}, p.begins)
	assert.Equal(t, int64(len("latency_ms\n12\n15\n")), p.read)
}

// TestProgressKeepsErrorNames: with progress the file is opened here and
// handed to ingest.Open as "-"; its errors still name the file.
func TestProgressKeepsErrorNames(t *testing.T) {
	bad := writeFile(t, "bad.csv.gz", "\x1f\x8b not gzip at all")
	for _, p := range []Progress{nil, &recorder{}} {
		o := options(bad)
		o.Progress = p
		_, err := Run(context.Background(), o, nil)
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), bad+": gzip: "), "%v", err)
	}
	o := options(filepath.Join(t.TempDir(), "missing.csv"))
	o.Progress = &recorder{}
	_, err := Run(context.Background(), o, nil)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
