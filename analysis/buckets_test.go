package analysis

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/recommend"
)

// Rows of the group an engine folded the groups beyond --max-groups into
// read as the group "other", and the report says how many calls from how
// many groups: the engine's count, once per answer, not once per row.
func TestBucketsFoldedByTheEngine(t *testing.T) {
	dir := t.TempDir()
	buckets := filepath.Join(dir, "b.csv")
	require.NoError(t, os.WriteFile(buckets, []byte("route,bucket_us,calls,censored,folded_groups\n"+
		"/a,1000,60,0,0\n"+
		",2000,30,0,7\n"+
		",4000,10,2,7\n"), 0o644))
	arrivals := filepath.Join(dir, "a.csv")
	require.NoError(t, os.WriteFile(arrivals, []byte("route,second,calls,folded_groups\n"+
		"/a,1800000000,60,0\n"+
		",1800000000,40,7\n"), 0o644))
	r, err := Run(context.Background(), Options{Inputs: []string{buckets, arrivals}, Recommend: recommend.DefaultOptions()}, nil)
	require.NoError(t, err)
	require.Len(t, r.Groups, 2)
	assert.Equal(t, "/a", r.Groups[0].Name)
	assert.Equal(t, "other", r.Groups[1].Name)
	assert.EqualValues(t, 40, r.Groups[1].Samples)
	assert.EqualValues(t, 2, r.Groups[1].Censored)
	assert.Contains(t, r.Input.Notes, `40 calls from 7 more groups are folded into "other": only 200 groups are kept apart (--max-groups).`)
}
