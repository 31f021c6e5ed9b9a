package nginx_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target/nginx"
)

// TestNginxIncludeBudget: each include is capped by whoever opens it; the
// run's budget caps their sum, bytes and words. One 4 MiB file included 20
// times took 6.9 GB, 500 includes crashed.
func TestNginxIncludeBudget(t *testing.T) {
	comment := strings.Repeat("# "+strings.Repeat("x", 1021)+"\n", 4<<10) // 4 MiB read, no word kept
	words := strings.Repeat("add_header X y;\n", 200_000)                 // 600,000 words
	files := map[string]string{"big.conf": comment, "words.conf": words}
	open := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("no file %s", p)
	}
	main := func(file string, n int) string {
		return "http { server { location / { proxy_pass http://u;\n" + strings.Repeat("include "+file+";\n", n) + "} } }\n"
	}
	err := bounded(t, 200, func() error {
		_, err := nginx.ReadConfig("nginx.conf", []byte(main("big.conf", 20)), open, nil)
		return err
	})
	// 16 includes of 4 MiB are the 64 MiB: the 17th, on line 18, is over.
	assert.EqualError(t, err, `nginx.conf:18: include "big.conf" (big.conf): over the byte budget of one run, 64 MiB in all`)
	assert.True(t, errors.Is(err, budget.ErrSpent))

	err = bounded(t, 400, func() error {
		_, err := nginx.ReadConfig("nginx.conf", []byte(main("words.conf", 500)), open, nil)
		return err
	})
	// 6 words on line 1, 2 for the include, 600,000 in the first
	// words.conf, 2 more: 448,566 left, 3 a line, 149,522 lines.
	assert.EqualError(t, err, `words.conf:149523: nginx words (every file and include of the config): over the node budget of one run, 1,048,576 nodes in all`)

	// The budget is the run's: what one config took is not there for the next.
	b := budget.New()
	_, err = nginx.ReadConfig("nginx.conf", []byte(main("words.conf", 1)), open, b)
	require.NoError(t, err)
	_, err = nginx.ReadConfig("nginx.conf", []byte(main("words.conf", 1)), open, b)
	assert.ErrorIs(t, err, budget.ErrSpent)
}

// TestNginxNamesUnique: a file included twice gives its locations twice,
// at one position: the second takes a number.
func TestNginxNamesUnique(t *testing.T) {
	open := func(string) ([]byte, error) { return []byte("location /a { proxy_pass http://u; }\n"), nil }
	objs, err := nginx.ReadConfig("nginx.conf", []byte("http { server { include a.conf; include a.conf; include a.conf; } }\n"), open, nil)
	require.NoError(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	assert.Equal(t, []string{"server location /a", "server location /a (a.conf:1)", "server location /a (a.conf:1) #2"}, names)
}
