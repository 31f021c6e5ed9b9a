package resilience4j_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
)

// TestR4jPathsCount: each Spring property holds its whole path; a key of
// many dots under an alias named many times is within the YAML nodes, not
// within the properties' segments.
func TestR4jPathsCount(t *testing.T) {
	// A key of 500 segments (YAML's implicit keys stop at 1,024
	// characters), named 5,000 times: 15,000 YAML nodes, 2.5 million
	// segments.
	data := "x: &m {" + strings.Repeat("a.", 499) + "b: 1}\nl: [" + strings.TrimSuffix(strings.Repeat("*m,", 5000), ",") + "]\n"
	err := targettest.Bounded(t, 300, func() error {
		_, err := resilience4j.ReadConfig("application.yml", []byte(data), nil, nil)
		return err
	})
	assert.EqualError(t, err, "application.yml:1: segments of Spring properties (a property's key segments and list items; aliases expanded): over the node budget of one run, 1,048,576 nodes in all")
}
