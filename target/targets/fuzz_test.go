package targets

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
)

// FuzzFromJSON is snippet --report on any bytes: report.ReadJSON refuses
// them with an error or returns a report, and every target renders that
// report without a panic, either with an error or with a snippet its own
// parser accepts, with no control character raw in it (a hostile group
// name must not end a comment or a string early).
func FuzzFromJSON(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "testdata", "*.json"))
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"groups":[{"name":"a\u0000\nb\u202e","recommendation":{"timeout_seconds":0.25}}]}`))
	f.Add([]byte(`{"groups":[{"name":"GET /x","recommendation":{"timeout_seconds":1e-9},"policy":{"attempts":-1}}]}`))
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
			if v, ok := goValidators[tg.Name]; ok {
				if err := v(body); err != nil {
					t.Fatalf("%s: its parser refuses the snippet: %v\n%s", tg.Name, err, body)
				}
			}
		}
	})
}
