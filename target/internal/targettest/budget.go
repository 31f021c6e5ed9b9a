package targettest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The hostile configs of issue 30, generated here: each must end with an
// error that names the bound it hit, fast and in little memory, whatever
// the file names (a reader's walk never meets more nodes than the budget).

// AliasBomb is anchors nested depth deep, each an alias list width wide,
// under the given prefix (the anchors' mapping keys, x0...): width^depth
// leaves from a few hundred bytes.
func AliasBomb(prefix string, depth, width int, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sx0: &a0 [%s]\n", prefix, strings.TrimSuffix(strings.Repeat(leaf+", ", width), ", "))
	for i := 1; i < depth; i++ {
		fmt.Fprintf(&b, "%sx%d: &a%d [%s]\n", prefix, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), width), ", "))
	}
	return b.String()
}

// Bounded runs read and fails the test when it allocates more than maxMiB
// or takes more than 15 s. The inputs here took minutes or gigabytes before
// their bounds: the allocation is the measure, and the time only catches a
// run that would never end. It is no speed test (those are benchmarks): a
// bound of 2 s failed at 2.19 s on a machine busy with other builds.
func Bounded(t *testing.T, maxMiB uint64, read func() error) error {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := read()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
	assert.Less(t, took, 15*time.Second, "took %s", took)
	assert.LessOrEqual(t, alloc, maxMiB, "allocated %d MiB", alloc)
	return err
}
