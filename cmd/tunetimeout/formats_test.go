package main

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGoldenMarkdown pins the Markdown report of the README's worked
// example, and per route with a call policy and its simulation.
func TestGoldenMarkdown(t *testing.T) {
	out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "-o", "markdown")
	require.Equal(t, 0, code, errOut)
	golden(t, "analyze-mixture.md", []byte(out))

	out, errOut, code = execute(t, "", "analyze", mixture, "--by", "route", "--pool", "200", "--rtt", "2ms",
		"--deadline", "3s", "--attempts", "3", "--retry-budget", "10%", "--idempotent", "-o", "markdown")
	require.Equal(t, 0, code, errOut)
	golden(t, "analyze-mixture-by-route.md", []byte(out))
}

// TestGoldenHTMLStructure pins the structure of the HTML report (its
// elements, ids and classes, not its text or its pixels): the worked
// example, and per route with a policy and embedded snippets.
func TestGoldenHTMLStructure(t *testing.T) {
	out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "-o", "html")
	require.Equal(t, 0, code, errOut)
	golden(t, "analyze-mixture.html.skeleton", []byte(skeleton(out)))

	out, errOut, code = execute(t, "", "analyze", mixture, "--by", "route", "--pool", "200", "--rtt", "2ms",
		"--deadline", "3s", "--attempts", "3", "--retry-budget", "10%", "--idempotent", "-o", "html", "--emit", "envoy,grpc")
	require.Equal(t, 0, code, errOut)
	golden(t, "analyze-mixture-by-route.html.skeleton", []byte(skeleton(out)))
}

// TestSkeleton shows what skeleton keeps.
func TestSkeleton(t *testing.T) {
	page := `<!DOCTYPE html><html><head><meta charset="utf-8"><style>p { x: 1 }</style></head>
<body><main id="m"><p class="a b">text <strong>bold</strong></p><ul><li>1</li><li>2</li><li>3</li></ul>
<svg id="s"><rect x="1"></rect><rect x="2"><title>tip</title></rect></svg></main></body></html>`
	assert.Equal(t, `html
  head
    meta
    style
  body
    main#m
      p.a.b
        strong
      ul
        li x3
      svg#s
        rect
        rect
          title
`, skeleton(page))
}

var (
	skeletonTag   = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>`)
	skeletonID    = regexp.MustCompile(`\sid="([^"]*)"`)
	skeletonClass = regexp.MustCompile(`\sclass="([^"]*)"`)
	voidElements  = map[string]bool{"meta": true, "br": true, "img": true, "input": true, "link": true, "hr": true}
)

// node is one element of a page's skeleton.
type node struct {
	name     string // tag#id.class.class
	children []*node
}

// skeleton reduces an HTML page to its elements, one a line, indented by
// depth, with their id and classes: texts, attributes and coordinates are
// left out, and a run of identical siblings is one line with a count. The
// contents of style elements are skipped. It reads the pages WriteHTML
// writes, whose elements are all closed.
func skeleton(page string) string {
	root := &node{}
	stack := []*node{root}
	rest := page
	for {
		loc := skeletonTag.FindStringSubmatchIndex(rest)
		if loc == nil {
			break
		}
		closing, tag, attrs := rest[loc[2]:loc[3]] == "/", strings.ToLower(rest[loc[4]:loc[5]]), rest[loc[6]:loc[7]]
		rest = rest[loc[1]:]
		if closing {
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		name := tag
		if m := skeletonID.FindStringSubmatch(attrs); m != nil {
			name += "#" + m[1]
		}
		if m := skeletonClass.FindStringSubmatch(attrs); m != nil {
			name += "." + strings.Join(strings.Fields(m[1]), ".")
		}
		n := &node{name: name}
		parent := stack[len(stack)-1]
		parent.children = append(parent.children, n)
		switch {
		case voidElements[tag] || strings.HasSuffix(attrs, "/"):
		case tag == "style":
			end := strings.Index(rest, "</style>")
			rest = rest[end+len("</style>"):]
		default:
			stack = append(stack, n)
		}
	}
	var b strings.Builder
	var write func(n *node, depth int)
	write = func(n *node, depth int) {
		for i := 0; i < len(n.children); {
			c := n.children[i]
			j := i + 1
			for j < len(n.children) && render(n.children[j]) == render(c) {
				j++
			}
			b.WriteString(strings.Repeat("  ", depth) + c.name)
			if j-i > 1 {
				fmt.Fprintf(&b, " x%d", j-i)
			}
			b.WriteString("\n")
			write(c, depth+1)
			i = j
		}
	}
	write(root, 0)
	return b.String()
}

// render is a node's subtree as one string, to compare siblings.
func render(n *node) string {
	s := n.name + "("
	for _, c := range n.children {
		s += render(c) + ","
	}
	return s + ")"
}

// TestHTMLEscapesGroupNames: route names come from request paths anyone
// can send; through the whole command they come out as text.
func TestHTMLEscapesGroupNames(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("latency_ms,route\n")
	names := []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`}
	for i := range 400 {
		fmt.Fprintf(&csv, "%d,%q\n", 10+i%40, names[i%2])
	}
	in := filepath.Join(t.TempDir(), "hostile.csv")
	require.NoError(t, os.WriteFile(in, []byte(strings.ReplaceAll(csv.String(), `\"`, `""`)), 0o644))
	out, errOut, code := execute(t, "", "analyze", in, "--by", "route", "-o", "html")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 0, strings.Count(strings.ToLower(out), "<script"), "we write no script; the name is no script either")
	assert.Equal(t, 0, strings.Count(strings.ToLower(out), "<img"))
	assert.Contains(t, out, "<h2>&lt;script&gt;alert(1)&lt;/script&gt;</h2>")
	// The name holds a quote, so the group's name is the value quoted
	// (names.Value): "\"><img src=x onerror=alert(1)>".
	assert.Contains(t, out, "<h2>&#34;\\&#34;&gt;&lt;img src=x onerror=alert(1)&gt;&#34;</h2>")

	md, errOut, code := execute(t, "", "analyze", in, "--by", "route", "-o", "markdown")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, md, "## \\<script\\>alert(1)\\</script\\>\n\n200 calls")
	assert.Contains(t, md, "## \"\\\\\"\\>\\<img src=x onerror=alert(1)\\>\"\n\n200 calls")
}

// TestEmitInsideTheDocument: -o html and -o markdown carry the --emit
// snippets inside the document, with nothing printed after it; text keeps
// printing them after the report.
func TestEmitInsideTheDocument(t *testing.T) {
	args := []string{"analyze", mixture, "--rate", "400", "--pool", "200", "--rtt", "2ms"}
	// The text report prints the snippet after itself, as before.
	text, errOut, code := execute(t, "", append(args, "--emit", "envoy")...)
	require.Equal(t, 0, code, errOut)
	_, envoy, found := strings.Cut(text, "# --- envoy.yaml (envoy) ---\n")
	require.True(t, found, text)

	out, errOut, code := execute(t, "", append(args, "-o", "html", "--emit", "envoy,grpc")...)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasSuffix(out, "</html>\n"), "nothing after the page")
	assert.Contains(t, out, "<h3>envoy.yaml (envoy)</h3>")
	assert.Contains(t, out, "<h3>grpc.json (grpc)</h3>")
	assert.Contains(t, html.UnescapeString(out), "<pre><code>"+envoy+"</code></pre>", "the same snippet, escaped")

	out, errOut, code = execute(t, "", append(args, "-o", "markdown", "--emit", "envoy")...)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasSuffix(out, "## Client configuration\n\n### envoy.yaml (envoy)\n\n```yaml\n"+envoy+"```\n"), out)

	dir := t.TempDir()
	out, errOut, code = execute(t, "", append(args, "-o", "html", "--emit", "envoy", "--emit-dir", dir)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "envoy.yaml")
	written, err := os.ReadFile(filepath.Join(dir, "envoy.yaml"))
	require.NoError(t, err)
	assert.Equal(t, envoy, string(written), "--emit-dir still writes the files")
}

// TestNoProgressOffATerminal: the tests' standard error is a buffer, not a
// terminal, so no progress line is drawn, with or without --quiet; stdout
// holds the report alone.
func TestNoProgressOffATerminal(t *testing.T) {
	for _, args := range [][]string{{}, {"--quiet"}, {"-q"}} {
		out, errOut, code := execute(t, "", append([]string{"analyze", mixture, "-o", "json"}, args...)...)
		require.Equal(t, 0, code, errOut)
		assert.Empty(t, errOut, "%v", args)
		assert.True(t, strings.HasPrefix(out, "{"), "%v", args)
	}
}

// TestReadmeMarkdownSample: the README's Markdown sample is the real
// output, as pinned by the golden file.
func TestReadmeMarkdownSample(t *testing.T) {
	readme, err := userDocs()
	require.NoError(t, err)
	g, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", "analyze-mixture.md"))
	require.NoError(t, err)
	body := strings.Replace(string(g), "../../testdata/mixture.csv", "testdata/mixture.csv", 1)
	assert.Contains(t, string(readme), "````markdown\n"+body+"````\n", "README.md or docs/ is out of date with analyze-mixture.md")
}
