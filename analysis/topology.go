package analysis

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// A topology says which configs are the hops of which call chain, for a
// user who has configs and no traces (check --topology FILE):
//
//	services:
//	  edge:
//	    configs: [envoy.yaml]
//	    calls: [orders]
//	  orders:
//	    configs: [orders-grpc.json]
//	    calls: [payments]
//	  payments:
//	    configs: [istio.yaml]
//
// A service's configs are those of its outgoing calls (the client side:
// its proxy, its gRPC service config, its mesh route); paths are relative
// to the topology file. check multiplies the attempts of the configs along
// each path from a service nobody calls, and of no others.
type Topology struct {
	// Services by name, in the file's order.
	Services []TopologyService
	// File is the topology's file name, for messages.
	File string
}

// TopologyService is one service of a topology.
type TopologyService struct {
	Name string
	// Configs are its config files, as check opens them (joined to the
	// topology file's directory).
	Configs []string
	// Calls are the services it calls.
	Calls []string
	// Line is the service's line in the topology file.
	Line int
	// Notes are written as comment lines above the service
	// (WriteTopology), escaped; a topology read has none.
	Notes []string
}

// maxTopologyBytes bounds a topology file: a few hundred services fit in
// a few kilobytes.
const maxTopologyBytes = 1 << 20

// ReadTopology reads a topology file. Errors name the file and line; a
// YAML alias is refused (a topology is small and written by hand, and an
// alias is how a small file becomes a large one).
func ReadTopology(name string) (*Topology, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usage.About(usage.Topology, fmt.Errorf("%s: %w", usage.Topology, err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTopologyBytes+1))
	if err != nil {
		return nil, usage.About(usage.Topology, fmt.Errorf("%s: %w", usage.Topology, err))
	}
	if len(data) > maxTopologyBytes {
		return nil, fmt.Errorf("%s: a topology of more than %d bytes", name, maxTopologyBytes)
	}
	return parseTopology(name, filepath.Dir(name), data)
}

func parseTopology(name, dir string, data []byte) (*Topology, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	errAt := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n.Line, fmt.Sprintf(format, args...))
	}
	var alias error
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode && alias == nil {
			alias = errAt(n, "a YAML alias (*%s): a topology is read without aliases; write the values out", n.Value)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	if alias != nil {
		return nil, alias
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: want services: with each service's configs and calls", name)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errAt(root, "want a mapping with services:")
	}
	t := &Topology{File: name}
	var services *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "services" {
			return nil, errAt(k, "unknown key %q: a topology has services:", k.Value)
		}
		services = v
	}
	if services == nil || services.Kind != yaml.MappingNode || len(services.Content) == 0 {
		return nil, errAt(root, "services: want a mapping of service names to their configs and calls")
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(services.Content); i += 2 {
		k, v := services.Content[i], services.Content[i+1]
		s := TopologyService{Name: k.Value, Line: k.Line}
		if s.Name == "" || strings.ContainsAny(s.Name, " \t\r\n") {
			return nil, errAt(k, "service %q: a name without spaces", s.Name)
		}
		if line, ok := seen[s.Name]; ok {
			return nil, errAt(k, "service %q is named twice (first at line %d)", s.Name, line)
		}
		seen[s.Name] = k.Line
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			t.Services = append(t.Services, s)
			continue
		}
		if v.Kind != yaml.MappingNode {
			return nil, errAt(v, "service %q: want configs: and calls:", s.Name)
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			fk, fv := v.Content[j], v.Content[j+1]
			list, err := stringList(fv)
			if err != nil {
				return nil, errAt(fv, "service %q, %s: %v", s.Name, fk.Value, err)
			}
			switch fk.Value {
			case "configs":
				for _, c := range list {
					if !filepath.IsAbs(c) {
						c = filepath.Join(dir, c)
					}
					s.Configs = append(s.Configs, c)
				}
			case "calls":
				s.Calls = list
			default:
				return nil, errAt(fk, "service %q: unknown key %q (want configs, calls)", s.Name, fk.Value)
			}
		}
		t.Services = append(t.Services, s)
	}
	for i := 0; i+1 < len(services.Content); i += 2 {
		s := t.Services[i/2]
		for _, c := range s.Calls {
			if _, ok := seen[c]; !ok {
				return nil, errAt(services.Content[i], "service %q calls %q, which is not under services: (list it, with no configs if it has none)", s.Name, c)
			}
		}
	}
	return t, nil
}

// stringList reads a YAML sequence of strings (or one string).
func stringList(n *yaml.Node) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || c.Value == "" {
				return nil, fmt.Errorf("want a list of names, not %s", kindName(c))
			}
			out = append(out, c.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of names, not %s", kindName(n))
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// Configs are every config file of the topology, each once, in order.
func (t *Topology) Configs() []string {
	var out []string
	for _, s := range t.Services {
		for _, c := range s.Configs {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// Paths are the topology's paths, each a list of service indexes from a
// service nobody calls (or, in a cycle nobody outside calls, its first
// service in the file) to one that calls no one further, cycles broken (a
// service at most once on a path), at most max paths.
func (t *Topology) Paths(max int) [][]int {
	index := map[string]int{}
	called := map[string]bool{}
	for i, s := range t.Services {
		index[s.Name] = i
		for _, c := range s.Calls {
			called[c] = true
		}
	}
	var paths [][]int
	on := map[int]bool{}
	var walk func(path []int)
	walk = func(path []int) {
		if len(paths) >= max {
			return
		}
		last := path[len(path)-1]
		next := 0
		for _, c := range t.Services[last].Calls {
			j := index[c]
			if on[j] {
				continue
			}
			next++
			on[j] = true
			walk(append(slices.Clone(path), j))
			on[j] = false
		}
		if next == 0 {
			paths = append(paths, path)
		}
	}
	visited := map[int]bool{}
	start := func(i int) {
		on[i] = true
		before := len(paths)
		walk([]int{i})
		on[i] = false
		for _, p := range paths[before:] {
			for _, j := range p {
				visited[j] = true
			}
		}
	}
	for i, s := range t.Services {
		if !called[s.Name] {
			start(i)
		}
	}
	// A cycle nobody outside calls has no root: it starts at its first
	// service in the file.
	for i := range t.Services {
		if !visited[i] && len(paths) < max {
			start(i)
		}
	}
	return paths
}

// WriteTopology writes services as a topology file ReadTopology reads
// back: each service's configs as given (relative to the file, forward
// slashes) and calls, every name and path double-quoted (escape.Quote:
// YAML reads it back as the original), header and each service's Notes as
// comment lines, escaped (escape.Visible: a newline in a name cannot end
// the comment).
func WriteTopology(w io.Writer, header []string, services []TopologyService) error {
	bw := bufio.NewWriter(w)
	comment := func(indent, line string) {
		fmt.Fprintf(bw, "%s#", indent)
		if line != "" {
			fmt.Fprintf(bw, " %s", escape.Visible(line))
		}
		fmt.Fprintln(bw)
	}
	list := func(items []string, path bool) string {
		q := make([]string, len(items))
		for i, it := range items {
			if path {
				it = filepath.ToSlash(it)
			}
			q[i] = escape.Quote(it)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	for _, h := range header {
		comment("", h)
	}
	fmt.Fprintln(bw, "services:")
	for _, s := range services {
		for _, n := range s.Notes {
			comment("  ", n)
		}
		fmt.Fprintf(bw, "  %s:\n", escape.Quote(s.Name))
		if len(s.Configs) > 0 {
			fmt.Fprintf(bw, "    configs: %s\n", list(s.Configs, true))
		}
		if len(s.Calls) > 0 {
			fmt.Fprintf(bw, "    calls: %s\n", list(s.Calls, false))
		}
	}
	return bw.Flush()
}
