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

func TestExpand(t *testing.T) {
	assert.Equal(t, "--latency upstream reads it; --span-kind, {Not} {x_y} {}", Expand("{latency} upstream reads it; {span-kind}, {Not} {x_y} {}"))
	assert.Equal(t, []Option{Latency, SpanKind}, Named("{latency} upstream reads it; {span-kind}, {Not} {x_y} {}"))
	saved := Render
	t.Cleanup(func() { Render = saved })
	Render = func(o Option) string { return "<" + string(o) + ">" }
	assert.Equal(t, "with <unit> and <field>", Expand("with {unit} and {field}"), "expanded when called, as Render then writes")
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

// foreign are flags of other programs that messages name: Jaeger's, and
// kubectl's in the command a switch snippet gives.
var foreign = []string{"--query.base-path", "--type"}

// optionKeyed are the library packages that name options by key only: no
// string literal of their code (tests aside) spells a flag, help built at
// program start included (a format's Summary, a flag's Usage, a metric's
// help name options {key}, and the CLI expands them: Expand). The one
// list: a package converted is added here, and the rule holds for it from
// then on.
var optionKeyed = []string{
	"ingest", "littleslaw", "recommend", "promsource", "jaegersource", "sqlsource", "source", "simulate",
	"report", "report/plot", "report/rules", "advice", "target", "target/envoy", "target/gonethttp",
	"target/grpc", "target/haproxy", "target/httpx", "target/linkerd", "target/nginx", "target/resilience4j",
	"analysis", "watch",
	"internal/budget", "internal/escape", "internal/finding", "internal/httpclient", "internal/human",
	"internal/mixture", "internal/names", "internal/nginxconf", "internal/outfile", "internal/progress",
	"internal/timeflag",
}

// spelledFlags returns, for each string literal of the Go files in dir
// (tests aside) that spells a flag, its position and text.
func spelledFlags(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, dir)
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		var check func(n ast.Node) bool
		check = func(n ast.Node) bool {
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
					found = append(found, fmt.Sprintf("%s: %s", fset.Position(lit.Pos()), lit.Value))
					break
				}
			}
			return true
		}
		ast.Inspect(f, check)
	}
	return found
}

func TestNoFlagSpelled(t *testing.T) {
	for _, pkg := range optionKeyed {
		for _, f := range spelledFlags(t, filepath.Join("..", "..", filepath.FromSlash(pkg))) {
			t.Errorf("%s spells a flag; name the option by its key (usage.Option)", f)
		}
	}
}

// TestSpelledFlagsFinds: the scan finds a flag in a message, in a
// constant, in a package variable and in what init registers, and leaves
// an option named by key, a flag of another program and tests.
func TestSpelledFlagsFinds(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "fmt"

const hint = "use --window"

var help = map[string]string{"a": "read with --latency", "b": "read with {latency}"}

var later = func() error { return fmt.Errorf("want --from") }

func init() {
	register("summary: --unit", func() string { return "--by " + hint })
}

func register(string, func() string) {}

func f(x int) error { return fmt.Errorf("%d (--rate) and --query.base-path", x) }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nvar _ = \"--tested\"\n"), 0o600))
	found := spelledFlags(t, dir)
	require.Len(t, found, 6, "%q", found)
	for i, want := range []string{`p.go:5:14: "use --window"`, `p.go:7:35: "read with --latency"`, `p.go:9:46: "want --from"`,
		`p.go:12:11: "summary: --unit"`, `p.go:12:53: "--by "`, `p.go:17:41: "%d (--rate) and --query.base-path"`} {
		assert.True(t, strings.HasSuffix(found[i], want), "%s, want %s", found[i], want)
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
	assert.Len(t, declared, 92)
	assert.ElementsMatch(t, declared, Options())
}
