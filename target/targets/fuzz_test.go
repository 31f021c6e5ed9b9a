package targets

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// FuzzFromJSON is snippet --report on any bytes: report.ReadJSON refuses
// them with an error or returns a report, and every target renders that
// report without a panic, either with an error or with a snippet with no
// control character raw in it (a hostile group name must not end a
// comment or a string early). Each target's own package has its parser
// read the snippets of the seeds (targettest.Snippets).
func FuzzFromJSON(f *testing.F) {
	for _, seed := range targettest.FuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := report.ReadJSON(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		for _, tg := range All {
			body, err := tg.Render(r, target.Options{Service: "backend"})
			if err != nil {
				continue
			}
			for _, c := range string(body) {
				if unicode.IsControl(c) && c != '\n' && c != '\t' || unicode.Is(unicode.Bidi_Control, c) {
					t.Fatalf("%s: control character %U raw in:\n%s", tg.Name, c, body)
				}
			}
		}
	})
}
