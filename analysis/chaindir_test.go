package analysis

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Service names from data become folder names with no path, no control
// character and no name a file system treats specially; names that meet
// (case ignored) or take the topology's file name are told apart with a
// suffix, and each change is said.
func TestFolderNames(t *testing.T) {
	services := []string{"../../etc", "a/b", "a_b", "Orders", "orders", "topology.yaml", "con.txt", "", "evil\x1b[2J\u202e", "..", "x."}
	folders, notes := folderNames(services)
	want := map[string]string{
		"../../etc":         "_._.._etc",
		"a/b":               "a_b-2", // a_b keeps its own name
		"a_b":               "a_b",
		"Orders":            "Orders",
		"orders":            "orders-2", // Orders on a case-insensitive file system
		"topology.yaml":     "topology.yaml-2",
		"con.txt":           "_con.txt",
		"":                  "_",
		"evil\x1b[2J\u202e": "evil__2J___",
		"..":                "__",
		"x.":                "x_",
	}
	assert.Equal(t, want, folders)
	for s, f := range folders {
		assert.Equal(t, f, filepath.Base(f), s)
		assert.NotContains(t, notes[s], "\x1b", s)
	}
	assert.Equal(t, `Service "a/b" is written as a_b-2: its name as a file name, a_b, is "a_b"'s`, notes["a/b"])
	assert.Equal(t, `Service "topology.yaml" is written as topology.yaml-2: its name as a file name, topology.yaml, is the topology file's`, notes["topology.yaml"])
	assert.Equal(t, `Service "evil\u001b[2J\u202e" is written as evil__2J___, its name as a file name`, notes["evil\x1b[2J\u202e"])
	assert.NotContains(t, notes, "a_b")
	long := folderName(string(bytes.Repeat([]byte("x"), 500)))
	assert.Len(t, long, maxFolderName)
}

// WriteTopology writes what ReadTopology reads back, names from data
// quoted and notes commented whatever they hold.
func TestWriteTopologyRoundTrip(t *testing.T) {
	in := []TopologyService{
		{Name: "gate\x1bway", Configs: []string{filepath.Join("gate_way", "x", "envoy.yaml")}, Calls: []string{`x"y`}, Notes: []string{"a\nservices: {}"}},
		{Name: `x"y`, Calls: nil},
	}
	var b bytes.Buffer
	require.NoError(t, WriteTopology(&b, []string{"head\nservices:"}, in))
	assert.NotContains(t, b.String(), "\x1b")
	assert.Contains(t, b.String(), "  # a\\x0aservices: {}\n")
	got, err := parseTopology("t.yaml", "dir", b.Bytes())
	require.NoError(t, err, b.String())
	require.Len(t, got.Services, 2)
	assert.Equal(t, "gate\x1bway", got.Services[0].Name)
	assert.Equal(t, []string{filepath.Join("dir", "gate_way", "x", "envoy.yaml")}, got.Services[0].Configs)
	assert.Equal(t, []string{`x"y`}, got.Services[0].Calls)
	assert.Equal(t, `x"y`, got.Services[1].Name)
	assert.Equal(t, [][]int{{0, 1}}, got.Paths(10))
}
