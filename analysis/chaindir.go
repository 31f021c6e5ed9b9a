package analysis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/outfile"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
)

// The chain's snippets (analyze --plan --emit-dir DIR, docs/chain.md): a
// folder per calling service and, under it, one per service it calls,
// holding the snippets of that edge alone, its policy the plan's (the
// edge's deadline, its attempts); and DIR/topology.yaml naming each
// service's configs and callees, so that check --topology reads the
// plan's own output as the chain it is. An edge has a folder of its own
// because a target's file configures one upstream: gRPC's service config
// is one channel's, and two edges' catch-all routes in one Envoy route
// table would shadow each other.

// TopologyFile is the topology WriteChainDir writes into its folder.
const TopologyFile = "topology.yaml"

// maxFolderName bounds a folder name made from a service's name: the
// name's hash is not needed, a suffix tells collisions apart.
const maxFolderName = 64

// chainEdge is one edge of the plan and the group that holds it.
type chainEdge struct {
	caller, callee string
	group          *report.Group
}

// WriteChainDir writes the snippets of targets for each edge of r's call
// graph into dir/CALLER/CALLEE/ (the service names made file names:
// folderNames), with o's options but each edge's callee as the service,
// and dir/topology.yaml, all or none (outfile.Temps.WriteAll); then says
// on log what it wrote and which names it changed. The topology names the
// files of the first target check reads: the other targets hold the same
// plan in their syntax, and a service deploys one of them (listing them
// all would multiply their attempts as layers).
func WriteChainDir(ctx context.Context, temps *outfile.Temps, dir string, r *report.Report, targets []target.Target, o target.Options, log io.Writer) error {
	if r.CallGraph == nil || len(r.CallGraph.Edges) == 0 {
		return fmt.Errorf("%s with %s: the report has no call graph (spans grouped by caller and callee)", usage.EmitDir, usage.Plan)
	}
	edges, left, services := chainEdges(r)
	if len(edges) == 0 {
		return fmt.Errorf("%s with %s: no group of the report is an edge of its call graph", usage.EmitDir, usage.Plan)
	}
	folders, notes := folderNames(services)
	var read *target.Target
	for i := range targets {
		if targets[i].Reads() {
			read = &targets[i]
			break
		}
	}
	var files []outfile.File
	var dirs []string
	configs := map[string][]string{}
	calls := map[string][]string{}
	for _, e := range edges {
		sub := *r
		sub.Groups = []report.Group{*e.group}
		sub.Snippets = nil
		eo := o
		eo.Service = e.callee
		rs, err := target.RenderAll(ctx, &sub, targets, eo)
		if err != nil {
			return fmt.Errorf("group %s: %w", escape.Quote(e.group.Name), err)
		}
		rel := filepath.Join(folders[e.caller], folders[e.callee])
		dirs = append(dirs, filepath.Join(dir, rel))
		for _, s := range rs {
			files = append(files, outfile.Bytes(filepath.Join(dir, rel, s.File), s.Body))
			if read != nil && s.Name == read.Name {
				configs[e.caller] = append(configs[e.caller], filepath.Join(rel, s.File))
			}
		}
		calls[e.caller] = append(calls[e.caller], e.callee)
	}
	// The topology names the services as the data do: check joins its
	// services to the data's edges by name.
	var topo []TopologyService
	for _, s := range chainOrder(services, edges) {
		ts := TopologyService{Name: s, Configs: configs[s], Calls: calls[s]}
		if n, ok := notes[s]; ok {
			ts.Notes = []string{n}
		}
		topo = append(topo, ts)
	}
	var tb bytes.Buffer
	if err := WriteTopology(&tb, topologyHeader(r, targets, read), topo); err != nil {
		return err
	}
	files = append(files, outfile.Bytes(filepath.Join(dir, TopologyFile), tb.Bytes()))
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := temps.WriteAll(ctx, files...); err != nil {
		return err
	}
	logChainDir(log, dir, len(edges), targets, services, notes, left)
	return nil
}

// chainEdges are the edges of r's call graph that r's groups hold, in the
// groups' order; left are the groups that hold none, and services the
// services the edges join, each once, as the edges first name them.
func chainEdges(r *report.Report) (edges []chainEdge, left, services []string) {
	add := func(s string) {
		if !slices.Contains(services, s) {
			services = append(services, s)
		}
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		k := slices.IndexFunc(r.CallGraph.Edges, func(e report.Edge) bool { return e.Group == g.Name })
		if k < 0 {
			left = append(left, g.Name)
			continue
		}
		e := r.CallGraph.Edges[k]
		edges = append(edges, chainEdge{caller: e.Caller, callee: e.Callee, group: g})
		add(e.Caller)
		add(e.Callee)
	}
	return edges, left, services
}

// logChainDir says on log what WriteChainDir wrote into dir (the
// snippets of edges edges, each target's file in each edge's folder, and
// the topology), the notes of the services whose names it changed
// (folderNames), and the groups it left out, which are no edge.
func logChainDir(log io.Writer, dir string, edges int, targets []target.Target, services []string, notes map[string]string, left []string) {
	var names []string
	for _, t := range targets {
		names = append(names, t.File)
	}
	fmt.Fprintf(log, "Wrote the plan's snippets of %d edges to %s, a folder per caller and callee (%s in each), and %s.\n",
		edges, dir, strings.Join(names, ", "), filepath.Join(dir, TopologyFile))
	for _, s := range services {
		if n, ok := notes[s]; ok {
			fmt.Fprintf(log, "%s.\n", escape.Visible(n))
		}
	}
	for _, g := range left {
		fmt.Fprintf(log, "Group %s is no edge of the call graph: its snippets are not written.\n", escape.Quote(g))
	}
}

// topologyHeader is the comment atop the chain's topology.
func topologyHeader(r *report.Report, targets []target.Target, read *target.Target) []string {
	h := []string{fmt.Sprintf("The chain's plan, written by tunetimeout analyze %s %s: each service's configs", usage.Plan, usage.EmitDir)}
	if p := r.CallGraph.Plan; p != nil {
		edges := make([]string, 0, len(p.RetryEdges))
		for _, g := range p.RetryEdges {
			if caller, callee, ok := groupname.Edge(g); ok {
				g = caller + " -> " + callee
			}
			edges = append(edges, g)
		}
		h[0] += fmt.Sprintf(" towards its callees (retries at the %s layer only: %s)", p.RetryAt, strings.Join(edges, ", "))
	}
	h[0] += "."
	if read == nil {
		return append(h, "None of the targets written is one check reads: the services list no configs.")
	}
	h = append(h, fmt.Sprintf("The configs are the %s snippets; list one target's files per service, the one it deploys:", read.Name))
	var others []string
	for _, t := range targets {
		if t.Reads() && t.Name != read.Name {
			others = append(others, t.File)
		}
	}
	if len(others) > 0 {
		h = append(h, fmt.Sprintf("each folder holds the same plan as %s too (the targets' attempts would multiply if all were listed).", strings.Join(others, ", ")))
	}
	return append(h, fmt.Sprintf("Check the plan as a chain: tunetimeout check %s %s %s SPANS", usage.Topology, TopologyFile, usage.Data))
}

// chainOrder is the services from the roots down: each root (a service
// nobody calls) and then, breadth first, its callees in the order of the
// edges; then whatever a cycle keeps from every root, in the order given.
func chainOrder(services []string, edges []chainEdge) []string {
	called := map[string]bool{}
	for _, e := range edges {
		called[e.callee] = true
	}
	var out []string
	seen := map[string]bool{}
	visit := func(s string) {
		if seen[s] {
			return
		}
		queue := []string{s}
		seen[s] = true
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			out = append(out, cur)
			for _, e := range edges {
				if e.caller == cur && !seen[e.callee] {
					seen[e.callee] = true
					queue = append(queue, e.callee)
				}
			}
		}
	}
	for _, s := range services {
		if !called[s] {
			visit(s)
		}
	}
	for _, s := range services {
		visit(s)
	}
	return out
}

// folderNames makes each service's name a folder name, unique among them
// and distinct from the topology's file: ASCII letters, digits, '-', '_'
// and '.' kept, any other byte '_' (a '/' or '\' never makes a path, and
// no control character reaches a file name), no '.' at either end (no
// "..", no hidden folder; Windows drops a trailing dot), a Windows device
// name (CON, NUL, COM1..., with any extension) prefixed with '_', at most maxFolderName bytes.
// Names that need no change keep them; a name that would meet another,
// case ignored (a case-insensitive file system), gets "-2", "-3"... Each
// changed name has a note saying what became of it, keyed by the name.
func folderNames(services []string) (map[string]string, map[string]string) {
	out := map[string]string{}
	notes := map[string]string{}
	taken := map[string]string{strings.ToLower(TopologyFile): TopologyFile}
	safe := map[string]string{}
	for _, s := range services {
		safe[s] = folderName(s)
	}
	// Names that are already safe first: they keep them.
	order := slices.Clone(services)
	slices.SortStableFunc(order, func(a, b string) int {
		ka, kb := safe[a] != a, safe[b] != b
		switch {
		case ka == kb:
			return 0
		case !ka:
			return -1
		}
		return 1
	})
	for _, s := range order {
		name := safe[s]
		owner, clash := taken[strings.ToLower(name)]
		for n := 2; clash; n++ {
			name = fmt.Sprintf("%s-%d", safe[s], n)
			_, clash = taken[strings.ToLower(name)]
		}
		taken[strings.ToLower(name)] = s
		out[s] = name
		switch {
		case name != safe[s]:
			notes[s] = fmt.Sprintf("Service %s is written as %s: its name as a file name, %s, is %s's", escape.Quote(s), name, safe[s], quotedOwner(owner))
		case name != s:
			notes[s] = fmt.Sprintf("Service %s is written as %s, its name as a file name", escape.Quote(s), name)
		}
	}
	return out, notes
}

// quotedOwner names what took a folder name: a service, or the topology.
func quotedOwner(owner string) string {
	if owner == TopologyFile {
		return "the topology file"
	}
	return escape.Quote(owner)
}

// windowsDevices are the names Windows gives devices, with any extension.
var windowsDevices = []string{"con", "prn", "aux", "nul",
	"com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9",
	"lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9"}

// folderName is a service's name as a folder name (folderNames).
func folderName(s string) string {
	b := []byte(s)
	if len(b) > maxFolderName {
		b = b[:maxFolderName]
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	if b[0] == '.' {
		b[0] = '_'
	}
	if b[len(b)-1] == '.' {
		b[len(b)-1] = '_'
	}
	out := string(b)
	base, _, _ := strings.Cut(strings.ToLower(out), ".")
	if slices.Contains(windowsDevices, base) {
		out = "_" + out // the part before the first dot names the device
	}
	return out
}
