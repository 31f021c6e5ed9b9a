package usage

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionRender(t *testing.T) {
	assert.Equal(t, "--interval", Interval.String())
	assert.Equal(t, "give --rate", fmt.Sprintf("give %s", Rate))
	saved := Render
	t.Cleanup(func() { Render = saved })
	Render = func(o Option) string { return "-" + strings.ToUpper(string(o)) }
	assert.Equal(t, "give -RATE", fmt.Sprintf("give %s", Rate), "messages name an option as Render writes it")
}

func TestAbout(t *testing.T) {
	assert.NoError(t, About(Window, nil))
	err := About(Profile, Errorf("%s day: no", Profile))
	assert.Equal(t, "--profile day: no", err.Error(), "the message is the error's own")
	o, ok := OptionOf(fmt.Errorf("reading: %w", err))
	assert.True(t, ok)
	assert.Equal(t, Profile, o)
	var ue *Error
	assert.True(t, errors.As(err, &ue), "a usage error stays one under the mark")
	_, ok = OptionOf(errors.New("plain"))
	assert.False(t, ok)
	assert.False(t, errors.As(About(Topology, errors.New("no such file")), &ue), "the mark does not make a usage error")
}

// flagInText finds a flag spelled in a string: "--window", "(--strict)".
var flagInText = regexp.MustCompile(`(?:^|[^-\w])(--[a-z][a-z.-]*)`)

// foreign are flags of other programs that messages name: Jaeger's.
var foreign = []string{"--query.base-path"}

// optionKeyed are the library packages that name options by key only: no
// string literal of their code (tests aside) spells a flag.
var optionKeyed = []string{"analysis", "advice", "source", "promsource", "jaegersource", "sqlsource"}

func TestNoFlagSpelled(t *testing.T) {
	for _, pkg := range optionKeyed {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, pkg)
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			require.NoError(t, err)
			f, err := parser.ParseFile(fset, name, src, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, m := range flagInText.FindAllStringSubmatch(s, -1) {
					if !slices.Contains(foreign, m[1]) {
						t.Errorf("%s: %s spells a flag; name the option by its key (usage.Option)", fset.Position(lit.Pos()), lit.Value)
					}
				}
				return true
			})
		}
	}
}

// TestOptionsListed: Options lists every option declared, each once.
func TestOptionsListed(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "option.go", nil, 0)
	require.NoError(t, err)
	var declared []Option
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "Option" {
				key, err := strconv.Unquote(v.Values[0].(*ast.BasicLit).Value)
				require.NoError(t, err)
				declared = append(declared, Option(key))
			}
		}
	}
	assert.Len(t, declared, 85)
	assert.ElementsMatch(t, declared, Options())
}
