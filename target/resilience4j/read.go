package resilience4j

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/kube"
)

// Reading resilience4j's Spring Boot configuration: application.yml or
// application.properties with resilience4j.timelimiter, .retry, .bulkhead
// and .thread-pool-bulkhead instances, as resilience4j-spring-boot binds
// them (resilience4j-framework-common's Common*ConfigurationProperties):
// an instance takes what it leaves out from its baseConfig, else from
// configs.default, else from resilience4j's defaults. Keys are bound
// relaxed, as Spring does (timeout-duration, timeoutDuration and
// timeout_duration are one), and durations are Spring's (2s, 500ms, PT2S,
// and a bare number of milliseconds).

// resilience4j's defaults.
const (
	r4jDefaultTimeout     = time.Second            // TimeLimiterConfig: timeoutDuration 1s
	r4jDefaultAttempts    = 3                      // RetryConfig.DEFAULT_MAX_ATTEMPTS, the first call included
	r4jDefaultWait        = 500 * time.Millisecond // RetryConfig.DEFAULT_WAIT_DURATION
	r4jDefaultMultiplier  = 1.5                    // IntervalFunction.DEFAULT_MULTIPLIER
	r4jDefaultRandomness  = 0.5                    // IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR
	r4jDefaultConcurrency = 25                     // BulkheadConfig.DEFAULT_MAX_CONCURRENT_CALLS
)

// Everything is what a retry without retryExceptions retries: every
// exception (RetryConfig's default predicate takes any Throwable).
var Everything = []string{"java.lang.Throwable"}

// The resilience4j modules whose instances an object combines, by their
// relaxed names.
var modules = map[string]bool{"timelimiter": true, "retry": true, "bulkhead": true, "threadpoolbulkhead": true}

// fileName is Spring Boot's configuration files: application.yml,
// application-prod.properties, and Spring Cloud's bootstrap.yml.
var fileName = regexp.MustCompile(`^(application|bootstrap).*\.(ya?ml|properties)$`)

// Detect reports whether a file is a Spring Boot
// configuration file that configures resilience4j.
func Detect(file string, data []byte) bool {
	if fileName.MatchString(filepath.Base(file)) {
		return true
	}
	return bytes.Contains(data, []byte("resilience4j.")) || bytes.Contains(data, []byte("resilience4j:"))
}

// ReadConfig reads the resilience4j instances of a Spring Boot
// configuration file (YAML, or .properties by its name or its look): one
// object per instance name (Kind "resilience4j instance") with its
// timelimiter (PerTryTimeout: Spring's aspects call
// Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call))))), so the
// time limit bounds each attempt and nothing bounds the whole call), retry
// and bulkhead. The objects have no matches: code names its instance.
// Documents that apply to a Spring profile (spring.config.activate.on-profile)
// give objects of their own, "name (profile p)", with the profile's
// values over the rest.
func ReadConfig(file string, data []byte, _ target.Opener, b *budget.Budget) ([]target.Object, error) {
	b = target.OrNew(b)
	docs, err := documents(b, file, data)
	if err != nil {
		return nil, err
	}
	base := newModel()
	type cond struct {
		label string
		props []property
	}
	var conds []cond
	for _, d := range docs {
		if label := condition(d); label != "" {
			conds = append(conds, cond{label, d})
			continue
		}
		base.add(d)
	}
	out, err := base.objects(file, "", nil)
	if err != nil {
		return nil, err
	}
	for _, c := range conds {
		// Each profile's objects are read over a copy of the rest: the
		// copies count against the budget, or many profiles over a large
		// file would take its size times their number.
		if err := b.Nodes(base.size(), "properties copied for Spring profiles"); err != nil {
			return nil, target.ErrorAt(docPos(file, c.props), "%w", err)
		}
		m := base.clone()
		m.add(c.props)
		only := newModel()
		only.add(c.props)
		objs, err := m.objects(file, " ("+c.label+")", only)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// property is one property of a Spring configuration document: its key's
// segments as written (a list index is "[0]"), its value or a YAML list's
// items, and where it stands.
type property struct {
	path   []string
	at     []target.Pos // where each segment of the path stands
	value  string
	list   []string
	isList bool
	empty  bool // a key without a value (an empty mapping): names an instance
	pos    target.Pos
}

// key is the property's name as Spring prints it.
func (p property) key() string {
	var b strings.Builder
	for i, s := range p.path {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// norm is a name in Spring's relaxed form: lower case, without dashes
// and underscores.
func norm(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("-", "", "_", "").Replace(s)
}

// documents splits a file into documents of properties: YAML documents,
// or .properties documents ("#---" between them).
func documents(b *budget.Budget, file string, data []byte) ([][]property, error) {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".properties":
		return properties(file, data)
	case ".yml", ".yaml":
		docs, err := target.YAMLDocuments(b, file, data)
		if err != nil {
			return nil, err
		}
		return readYAML(b, file, docs)
	}
	// Neither name: YAML when it is a YAML mapping, else properties.
	if docs, err := target.YAMLDocuments(b, file, data); err == nil && len(docs) > 0 && kube.Resolve(docs[0]).Kind == yaml.MappingNode {
		return readYAML(b, file, docs)
	} else if errors.Is(err, budget.ErrSpent) {
		return nil, err
	}
	return properties(file, data)
}

// maxDepth bounds the nesting of a YAML document.
const maxDepth = 64

// readYAML flattens each YAML document into properties, as Spring's
// YamlPropertySourceLoader does: keys with dots are paths
// ("resilience4j.retry:" is resilience4j, retry), a list of values is one
// property, other lists are indexed. Each property holds its whole path:
// the segments of every property are taken from the run's node budget, as
// many nodes as its path is long (a key of many dots, or an alias of a deep
// mapping, repeats them).
func readYAML(b *budget.Budget, file string, docs []*yaml.Node) ([][]property, error) {
	var out [][]property
	for _, d := range docs {
		var props []property
		w := walker{file: file, budget: b, out: &props}
		if err := w.walk(d, nil, nil, target.NodePos(file, d), 0); err != nil {
			return nil, err
		}
		out = append(out, props)
	}
	return out, nil
}

// walker flattens one document.
type walker struct {
	file   string
	budget *budget.Budget
	out    *[]property
}

// add appends a property, its path taken from the budget.
func (w walker) add(p property) error {
	if err := w.budget.Nodes(int64(len(p.path)+len(p.list)), "segments of Spring properties (a property's key segments and list items; aliases expanded)"); err != nil {
		return target.ErrorAt(p.pos, "%w", err)
	}
	*w.out = append(*w.out, p)
	return nil
}

func (w walker) walk(n *yaml.Node, path []string, at []target.Pos, pos target.Pos, depth int) error {
	file := w.file
	n = kube.Resolve(n)
	if depth > maxDepth {
		return target.ErrorAt(pos, "%s: nested too deep", strings.Join(path, "."))
	}
	if n == nil || kube.Null(n) {
		return w.add(property{path: path, at: at, empty: true, pos: pos})
	}
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			if err := w.add(property{path: path, at: at, empty: true, pos: pos}); err != nil {
				return err
			}
		}
		// Merge keys (<<: *defaults) first, so that the mapping's own keys
		// win, as in SnakeYAML.
		for pass := 0; pass < 2; pass++ {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := kube.Resolve(n.Content[i])
				if k == nil || k.Kind != yaml.ScalarNode {
					return target.ErrorAt(target.NodePos(file, n.Content[i]), "%s: a key that is not a name", strings.Join(path, "."))
				}
				merge := k.Tag == "!!merge" || k.Value == "<<"
				if merge != (pass == 0) {
					continue
				}
				v := n.Content[i+1]
				if merge {
					srcs := []*yaml.Node{kube.Resolve(v)}
					if s := kube.Resolve(v); s != nil && s.Kind == yaml.SequenceNode {
						srcs = s.Content
					}
					for _, s := range srcs {
						if err := w.walk(s, path, at, target.NodePos(file, k), depth+1); err != nil {
							return err
						}
					}
					continue
				}
				segs := splitKey(k.Value)
				p := append(append([]string(nil), path...), segs...)
				a := append([]target.Pos(nil), at...)
				for range segs {
					a = append(a, target.NodePos(file, k))
				}
				if err := w.walk(v, p, a, target.NodePos(file, k), depth+1); err != nil {
					return err
				}
			}
		}
	case yaml.SequenceNode:
		scalars := true
		for _, c := range n.Content {
			if c = kube.Resolve(c); c == nil || c.Kind != yaml.ScalarNode {
				scalars = false
			}
		}
		if scalars {
			var items []string
			for _, c := range n.Content {
				items = append(items, kube.Resolve(c).Value)
			}
			return w.add(property{path: path, at: at, list: items, isList: true, pos: pos})
		}
		for i, c := range n.Content {
			p := append(append([]string(nil), path...), "["+strconv.Itoa(i)+"]")
			a := append(append([]target.Pos(nil), at...), target.NodePos(file, c))
			if err := w.walk(c, p, a, target.NodePos(file, c), depth+1); err != nil {
				return err
			}
		}
	default:
		if err := w.add(property{path: path, at: at, value: n.Value, pos: pos}); err != nil {
			return err
		}
	}
	return nil
}

// splitKey splits a property key at its dots, but inside brackets:
// "resilience4j.retry.instances[backend.a]" is resilience4j, retry,
// instances, backend.a, and "list[0]" is list, [0].
func splitKey(key string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			j := strings.IndexByte(key[i:], ']')
			if j < 0 {
				cur.WriteString(key[i:])
				i = len(key)
				continue
			}
			inner := key[i+1 : i+j]
			if _, err := strconv.Atoi(inner); err == nil {
				out = append(out, "["+inner+"]")
			} else {
				out = append(out, inner)
			}
			i += j
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// properties reads a .properties file as java.util.Properties does
// (comments with # or !, key and value split by =, : or spaces, a
// backslash at the end of a line continuing it, \uXXXX escapes), with
// Spring's "#---" between documents. A property stands on the line its key
// starts on.
func properties(file string, data []byte) ([][]property, error) {
	if !utf8.Valid(data) {
		return nil, target.ErrorAt(target.Pos{File: file}, "not UTF-8 text")
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var docs [][]property
	var doc []property
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "#---" || line == "!---" {
			docs = append(docs, doc)
			doc = nil
			continue
		}
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		logical := line
		for continues(logical) && i+1 < len(lines) {
			i++
			logical = logical[:len(logical)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continues(logical) {
			logical = logical[:len(logical)-1]
		}
		key, value := splitProperty(logical)
		if key == "" {
			continue
		}
		doc = append(doc, property{path: splitKey(key), value: strings.TrimSpace(value), pos: target.Pos{File: file, Line: start}})
	}
	return append(docs, doc), nil
}

// continues reports whether a line ends in an odd number of
// backslashes, which continue it on the next.
func continues(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line into its key and value, both
// unescaped.
func splitProperty(s string) (key, value string) {
	i := 0
	for ; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '=' || s[i] == ':' || s[i] == ' ' || s[i] == '\t' || s[i] == '\f' {
			break
		}
	}
	key = s[:min(i, len(s))]
	rest := ""
	if i < len(s) {
		rest = strings.TrimLeft(s[i:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') && !(s[i] == '=' || s[i] == ':') {
			rest = rest[1:]
		} else if s[i] == '=' || s[i] == ':' {
			rest = s[i+1:]
		}
		rest = strings.TrimLeft(rest, " \t\f")
	}
	return unescape(key), unescape(rest)
}

// unescape undoes the escapes of a properties file.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// condition returns the condition of a document that applies only
// with a Spring profile or on a cloud platform ("profile prod"), "" for
// one that always applies.
func condition(doc []property) string {
	for _, p := range doc {
		n := make([]string, len(p.path))
		for i, s := range p.path {
			n[i] = norm(s)
		}
		switch strings.Join(n, ".") {
		case "spring.config.activate.onprofile", "spring.profiles":
			if p.isList {
				return "profile " + strings.Join(p.list, ",")
			}
			return "profile " + p.value
		case "spring.config.activate.oncloudplatform":
			return "cloud platform " + p.value
		}
	}
	return ""
}

// entry is one property of an instance or config: its value, where it
// stands and where it comes from.
type entry struct {
	key    string // as written: resilience4j.retry.instances.a.maxAttempts
	value  string
	list   []string
	isList bool
	pos    target.Pos
}

// section is one module's instances and configs, each a map from a
// relaxed property name to its entry.
type section struct {
	instances map[string]map[string]*entry
	configs   map[string]map[string]*entry
}

// model is what a configuration says about resilience4j's modules.
type model struct {
	sections map[string]*section
	first    map[string]target.Pos // where each instance name first stands
}

func newModel() *model {
	return &model{sections: map[string]*section{}, first: map[string]target.Pos{}}
}

// size is what a clone copies: instance names and properties.
func (m *model) size() int64 {
	n := int64(len(m.first))
	for _, s := range m.sections {
		for _, g := range []map[string]map[string]*entry{s.instances, s.configs} {
			for _, props := range g {
				n += 1 + int64(len(props))
			}
		}
	}
	return n
}

// docPos is where a document's first property stands.
func docPos(file string, props []property) target.Pos {
	if len(props) > 0 {
		return props[0].pos
	}
	return target.Pos{File: file}
}

func (m *model) clone() *model {
	c := newModel()
	for k, v := range m.first {
		c.first[k] = v
	}
	for name, s := range m.sections {
		cs := &section{instances: map[string]map[string]*entry{}, configs: map[string]map[string]*entry{}}
		for _, pair := range []struct {
			from, to map[string]map[string]*entry
		}{{s.instances, cs.instances}, {s.configs, cs.configs}} {
			for k, props := range pair.from {
				cp := map[string]*entry{}
				for pk, e := range props {
					cp[pk] = e
				}
				pair.to[k] = cp
			}
		}
		c.sections[name] = cs
	}
	return c
}

// add applies a document's properties over the model: a later value of a
// property replaces an earlier one, as a later document does in Spring.
func (m *model) add(doc []property) {
	lists := map[*entry]bool{} // the lists this document set, which it replaces whole
	for _, p := range doc {
		if len(p.path) < 4 || norm(p.path[0]) != "resilience4j" || !modules[norm(p.path[1])] {
			continue
		}
		mod := norm(p.path[1])
		s := m.sections[mod]
		if s == nil {
			s = &section{instances: map[string]map[string]*entry{}, configs: map[string]map[string]*entry{}}
			m.sections[mod] = s
		}
		var group map[string]map[string]*entry
		switch norm(p.path[2]) {
		case "instances", "backends":
			group = s.instances
		case "configs":
			group = s.configs
		default:
			continue
		}
		name := p.path[3]
		if group[name] == nil {
			group[name] = map[string]*entry{}
		}
		at := p.pos
		if len(p.at) > 3 {
			at = p.at[3]
		}
		if first, ok := m.first[name]; (!ok || at.Line < first.Line) && norm(p.path[2]) != "configs" {
			m.first[name] = at
		}
		rest := p.path[4:]
		if p.empty || len(rest) == 0 {
			continue
		}
		index := strings.HasPrefix(rest[len(rest)-1], "[")
		if index {
			rest = rest[:len(rest)-1]
		}
		var parts []string
		for _, r := range rest {
			parts = append(parts, norm(r))
		}
		prop := strings.Join(parts, ".")
		switch {
		case index:
			e := group[name][prop]
			if e == nil || !lists[e] {
				e = &entry{key: property{path: p.path[:len(p.path)-1]}.key(), isList: true, pos: p.pos}
				group[name][prop] = e
				lists[e] = true
			}
			e.list = append(e.list, p.value)
		default:
			group[name][prop] = &entry{key: p.key(), value: p.value, list: p.list, isList: p.isList, pos: p.pos}
		}
	}
}

// lookup finds a property of an instance of a module: the instance's, else
// its baseConfig's (and so on), else configs.default's, as
// resilience4j's create*Config does. from names the config it came from,
// "" for the instance.
func (m *model) lookup(mod, name, prop string) (e *entry, from string, err error) {
	s := m.sections[mod]
	props := s.instances[name]
	if e := props[prop]; e != nil {
		return e, "", nil
	}
	seen := map[string]bool{}
	cur, curName := props, name
	for {
		b := cur["baseconfig"]
		var next string
		switch {
		case b != nil && strings.TrimSpace(b.value) != "":
			next = strings.TrimSpace(b.value)
			if s.configs[next] == nil {
				return nil, "", target.ErrorAt(b.pos, "%s %q: resilience4j.%s.configs has no %q (resilience4j fails with ConfigurationNotFoundException)", b.key, b.value, moduleKey(mod), next)
			}
			if seen[next] {
				return nil, "", target.ErrorAt(b.pos, "%s %q: the baseConfig chain comes back to %q", b.key, b.value, next)
			}
		case curName != "default" && s.configs["default"] != nil && !seen["default"]:
			next = "default"
		default:
			return nil, "", nil
		}
		seen[next] = true
		cur, curName = s.configs[next], next
		if e := cur[prop]; e != nil {
			return e, next, nil
		}
	}
}

// leaf is the last name of a key: maxAttempts.
func leaf(key string) string { return key[strings.LastIndexByte(key, '.')+1:] }

// moduleKey is a module's name as Spring's properties write it.
func moduleKey(mod string) string {
	if mod == "threadpoolbulkhead" {
		return "thread-pool-bulkhead"
	}
	return mod
}

// objects returns an object per instance name, in the order they first
// appear, each name suffixed; only, when set, keeps the names it has.
func (m *model) objects(file, suffix string, only *model) ([]target.Object, error) {
	var names []string
	for n := range m.first {
		if only != nil {
			if _, ok := only.first[n]; !ok {
				continue
			}
		}
		names = append(names, n)
	}
	pos := m.first
	if only != nil {
		pos = only.first
	}
	sort.Slice(names, func(i, j int) bool {
		if pos[names[i]].Line != pos[names[j]].Line {
			return pos[names[i]].Line < pos[names[j]].Line
		}
		return names[i] < names[j]
	})
	var out []target.Object
	for _, n := range names {
		obj, err := m.object(n, pos[n])
		if err != nil {
			return nil, err
		}
		obj.Name += suffix
		out = append(out, obj)
	}
	return out, nil
}

// object combines an instance's timelimiter, retry, bulkhead and
// thread-pool-bulkhead.
func (m *model) object(name string, pos target.Pos) (target.Object, error) {
	obj := target.Object{Target: "resilience4j", Kind: "resilience4j instance", Name: name, Pos: pos}
	in := &instance{m: m, name: name, pos: pos, inherited: map[string][]string{}}
	readers := []struct {
		mod  string
		read func(*target.Object) error
	}{
		{"timelimiter", in.timeLimiter},
		{"retry", in.retry},
		{"bulkhead", in.bulkhead},
		{"threadpoolbulkhead", in.threadPoolBulkhead},
	}
	// A baseConfig that names no config fails the instance in resilience4j,
	// whatever the instance sets itself.
	for _, r := range readers {
		if in.has(r.mod) {
			if _, _, err := m.lookup(r.mod, name, "\x00"); err != nil {
				return obj, err
			}
		}
	}
	for _, r := range readers {
		if in.has(r.mod) {
			if err := r.read(&obj); err != nil {
				return obj, err
			}
		}
	}
	obj.Notes = append(obj.Notes, in.inheritedNotes()...)
	return obj, nil
}

// instance reads the properties of one instance name, in each module that
// has it, keeping what it takes from a config for a note.
type instance struct {
	m    *model
	name string
	pos  target.Pos // where the name first stands: the place of a default
	// What the instance takes from a config, by config, for one note each.
	fromOrder []string
	inherited map[string][]string
}

// has reports whether a module has the instance.
func (in *instance) has(mod string) bool {
	s := in.m.sections[mod]
	return s != nil && s.instances[in.name] != nil
}

// get looks a property of the instance up (model.lookup), noting the
// config it came from, if any.
func (in *instance) get(mod, prop string) (*entry, error) {
	e, from, err := in.m.lookup(mod, in.name, prop)
	if e != nil && from != "" {
		cfg := "resilience4j." + moduleKey(mod) + ".configs." + from
		if in.inherited[cfg] == nil {
			in.fromOrder = append(in.fromOrder, cfg)
		}
		k := leaf(e.key)
		if !slices.Contains(in.inherited[cfg], k) {
			in.inherited[cfg] = append(in.inherited[cfg], k)
		}
	}
	return e, err
}

// inheritedNotes says what the instance took from each config, in the
// order it first took something from it.
func (in *instance) inheritedNotes() []string {
	var notes []string
	for _, cfg := range in.fromOrder {
		notes = append(notes, strings.Join(in.inherited[cfg], ", ")+" from "+cfg)
	}
	return notes
}

// dur reads a duration property (SpringBootDuration), nil when unset.
func (in *instance) dur(mod, prop string) (*target.Setting[float64], error) {
	e, err := in.get(mod, prop)
	if e == nil || err != nil {
		return nil, err
	}
	d, err := SpringBootDuration(e.value)
	if err == nil && d < 0 {
		err = fmt.Errorf("%q: negative (resilience4j refuses it)", e.value)
	}
	if err != nil {
		return nil, target.ErrorAt(e.pos, "%s %v", e.key, err)
	}
	return target.Set(d.Seconds(), e.pos, e.value), nil
}

// boolean reads a true-or-false property (springBool); its entry is nil
// when unset.
func (in *instance) boolean(mod, prop string) (bool, *entry, error) {
	e, err := in.get(mod, prop)
	if e == nil || err != nil {
		return false, nil, err
	}
	v, ok := springBool(e.value)
	if !ok {
		return false, nil, target.ErrorAt(e.pos, "%s %q: want true or false", e.key, e.value)
	}
	return v, e, nil
}

// number reads a finite number; its entry is nil when unset.
func (in *instance) number(mod, prop string) (float64, *entry, error) {
	e, err := in.get(mod, prop)
	if e == nil || err != nil {
		return 0, nil, err
	}
	v, perr := strconv.ParseFloat(strings.TrimSpace(e.value), 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, nil, target.ErrorAt(e.pos, "%s %q: not a number", e.key, e.value)
	}
	return v, e, nil
}

// integer reads a whole number that fits an int32; its entry is nil when
// unset.
func (in *instance) integer(mod, prop string) (int, *entry, error) {
	e, err := in.get(mod, prop)
	if e == nil || err != nil {
		return 0, nil, err
	}
	v, perr := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(e.value), "+"), 10, 32)
	if perr != nil {
		return 0, nil, target.ErrorAt(e.pos, "%s %q: not a whole number", e.key, e.value)
	}
	return int(v), e, nil
}

// count reads a whole-number property of at least least (smaller, says
// tooFew), def unless set.
func (in *instance) count(mod, prop string, least int, tooFew string, def int) (*target.Setting[int], error) {
	n, e, err := in.integer(mod, prop)
	switch {
	case err != nil:
		return nil, err
	case e != nil && n < least:
		return nil, target.ErrorAt(e.pos, "%s %q: %s", e.key, e.value, tooFew)
	case e != nil:
		return target.Set(n, e.pos, e.value), nil
	}
	return target.Defaulted(def, in.pos), nil
}

// timeLimiter reads the time limiter's timeoutDuration (1s unless set) as
// the per-try timeout, and notes a cancelRunningFuture of false.
func (in *instance) timeLimiter(obj *target.Object) error {
	t, err := in.dur("timelimiter", "timeoutduration")
	if err != nil {
		return err
	}
	if t == nil {
		t = target.Defaulted(r4jDefaultTimeout.Seconds(), in.pos)
	}
	obj.PerTryTimeout = t
	obj.Notes = append(obj.Notes, "the time limiter bounds each attempt (Spring's aspects: Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))); nothing bounds the whole call; it needs a CompletionStage or reactive return type")
	if cancel, e, err := in.boolean("timelimiter", "cancelrunningfuture"); err != nil {
		return err
	} else if e != nil && !cancel {
		obj.Notes = append(obj.Notes, "cancelRunningFuture false: a timed-out call goes on running")
	}
	return nil
}

// retry reads the retry's maxAttempts (3 unless set), its wait (backoff)
// and what it retries (retryOn), and notes ignoreExceptions and
// resultPredicate, which are not modeled.
func (in *instance) retry(obj *target.Object) error {
	attempts, err := in.count("retry", "maxattempts", 1, "resilience4j requires at least 1 (maxAttempts counts the first call)", r4jDefaultAttempts)
	if err != nil {
		return err
	}
	obj.Attempts = attempts
	if err := in.backoff(obj); err != nil {
		return err
	}
	if err := in.retryOn(obj); err != nil {
		return err
	}
	for _, k := range []string{"ignoreexceptions", "resultpredicate"} {
		if e, err := in.get("retry", k); err != nil {
			return err
		} else if e != nil {
			v := e.value
			if e.isList {
				v = strings.Join(e.list, ", ")
			}
			obj.Notes = append(obj.Notes, fmt.Sprintf("retry %s %s: not modeled", leaf(e.key), v))
		}
	}
	return nil
}

// retryOn reads the retry's retryExceptions, a YAML list or a
// comma-separated value; without them a retryExceptionPredicate decides,
// which is only noted, else every exception is retried.
func (in *instance) retryOn(obj *target.Object) error {
	exc, err := in.get("retry", "retryexceptions")
	if err != nil {
		return err
	}
	if exc == nil {
		if p, err := in.get("retry", "retryexceptionpredicate"); err != nil {
			return err
		} else if p != nil {
			obj.Notes = append(obj.Notes, "retryExceptionPredicate "+p.value+" decides which exceptions are retried: not modeled")
		} else {
			obj.RetryOn = target.Defaulted(Everything, in.pos)
			obj.Notes = append(obj.Notes, "no retryExceptions: every exception is retried, a timeout and a failure after the request was sent included")
		}
		return nil
	}
	list := exc.list
	if !exc.isList {
		for _, c := range strings.Split(exc.value, ",") {
			if c = strings.TrimSpace(c); c != "" {
				list = append(list, c)
			}
		}
	}
	raw := exc.value
	if exc.isList {
		raw = strings.Join(exc.list, ",")
	}
	obj.RetryOn = target.Set(list, exc.pos, raw)
	return nil
}

// bulkhead reads the bulkhead's maxConcurrentCalls (25 unless set) and
// maxWaitDuration (0 unless set).
func (in *instance) bulkhead(obj *target.Object) error {
	calls, err := in.count("bulkhead", "maxconcurrentcalls", 0, "negative", r4jDefaultConcurrency)
	if err != nil {
		return err
	}
	obj.MaxInFlight = calls
	w, err := in.dur("bulkhead", "maxwaitduration")
	if err != nil {
		return err
	}
	if w == nil {
		w = target.Defaulted(0.0, in.pos)
	}
	obj.QueueTimeout = w
	return nil
}

// threadPoolBulkhead notes the thread-pool bulkhead's sizes: it runs calls
// on a pool of its own, which is not modeled.
func (in *instance) threadPoolBulkhead(obj *target.Object) error {
	var parts []string
	for _, k := range []string{"maxthreadpoolsize", "corethreadpoolsize", "queuecapacity", "keepaliveduration"} {
		e, err := in.get("threadpoolbulkhead", k)
		if err != nil {
			return err
		}
		if e != nil {
			parts = append(parts, leaf(e.key)+" "+e.value)
		}
	}
	obj.Notes = append(obj.Notes, "thread-pool-bulkhead ("+strings.Join(parts, ", ")+"): runs calls on a pool of its own; not modeled as MaxInFlight")
	return nil
}

// backoff reads a retry's wait: waitDuration (500ms unless set),
// exponential when enableExponentialBackoff (times
// exponentialBackoffMultiplier, 1.5 unless set, up to
// exponentialMaxWaitDuration), randomized when enableRandomizedWait
// (±randomizedWaitFactor, 0.5 unless set, around each wait). As in
// CommonRetryConfigurationProperties, the flags do nothing without a
// waitDuration.
func (in *instance) backoff(obj *target.Object) error {
	wait, err := in.dur("retry", "waitduration")
	if err != nil {
		return err
	}
	expo, _, err := in.boolean("retry", "enableexponentialbackoff")
	if err != nil {
		return err
	}
	random, _, err := in.boolean("retry", "enablerandomizedwait")
	if err != nil {
		return err
	}
	if wait == nil {
		obj.BackoffBase = target.Defaulted(r4jDefaultWait.Seconds(), in.pos)
		obj.BackoffMax = obj.BackoffBase
		obj.Jitter = "none"
		if expo || random {
			obj.Notes = append(obj.Notes, "enableExponentialBackoff and enableRandomizedWait do nothing without a waitDuration: a fixed wait of 500ms")
		}
		return nil
	}
	obj.BackoffBase = wait
	obj.Jitter = "none"
	if random {
		f, e, err := in.number("retry", "randomizedwaitfactor")
		if err != nil {
			return err
		}
		if e == nil {
			f = r4jDefaultRandomness
		} else if f < 0 || f >= 1 {
			return target.ErrorAt(e.pos, "%s %q: resilience4j takes 0 to less than 1", e.key, e.value)
		}
		obj.Jitter = "±" + strconv.FormatFloat(f*100, 'f', -1, 64) + " %"
		obj.JitterAbove = f
	}
	if !expo {
		obj.BackoffMax = wait
		return nil
	}
	mult, e, err := in.number("retry", "exponentialbackoffmultiplier")
	if err != nil {
		return err
	}
	if e == nil {
		mult = r4jDefaultMultiplier
	} else if mult < 1 {
		return target.ErrorAt(e.pos, "%s %q: resilience4j requires at least 1", e.key, e.value)
	}
	maxWait, err := in.dur("retry", "exponentialmaxwaitduration")
	if err != nil {
		return err
	}
	obj.BackoffMax = maxWait
	// IntervalFunction.ofExponentialRandomBackoff randomizes each wait,
	// then caps it at exponentialMaxWaitDuration.
	obj.BackoffGrowth = mult
	if maxWait == nil {
		obj.Notes = append(obj.Notes, fmt.Sprintf("exponential backoff x%s without exponentialMaxWaitDuration: the waits grow without a cap", strconv.FormatFloat(mult, 'f', -1, 64)))
	} else {
		obj.Notes = append(obj.Notes, fmt.Sprintf("exponential backoff x%s", strconv.FormatFloat(mult, 'f', -1, 64)))
	}
	return nil
}

// springBool converts as Spring's StringToBooleanConverter: true, on, yes
// or 1; false, off, no or 0; any case.
func springBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "on", "yes", "1":
		return true, true
	case "false", "off", "no", "0":
		return false, true
	}
	return false, false
}

var (
	springSimpleDuration = regexp.MustCompile(`^([+-]?[0-9]+)([a-zA-Z]{0,2})$`)
	springISODuration    = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)
)

// SpringBootDuration parses a duration as Spring Boot binds a
// java.time.Duration (DurationStyle.detectAndParse): a whole number and a
// unit of ns, us, ms, s, m, h or d (any case), a bare number of
// milliseconds (resilience4j's properties have no @DurationUnit), or ISO
// 8601 as java.time.Duration.parse takes it (PT2S, PT0.5S, P1DT2H).
func SpringBootDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if m := springSimpleDuration.FindStringSubmatch(t); m != nil {
		unit, ok := map[string]time.Duration{"": time.Millisecond, "ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond,
			"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[strings.ToLower(m[2])]
		if !ok {
			return 0, fmt.Errorf("%q: unknown unit %q (ns, us, ms, s, m, h or d)", s, m[2])
		}
		v, err := strconv.ParseInt(strings.TrimPrefix(m[1], "+"), 10, 64)
		if err != nil || v > math.MaxInt64/int64(unit) || v < math.MinInt64/int64(unit) {
			return 0, fmt.Errorf("%q: too long", s)
		}
		return time.Duration(v) * unit, nil
	}
	m := springISODuration.FindStringSubmatch(t)
	if m == nil || strings.EqualFold(m[3], "T") || (m[2] == "" && m[3] == "") {
		return 0, fmt.Errorf("%q: not a duration (800ms, 2s, 1m, PT2S; a bare number is milliseconds)", s)
	}
	var total float64 // seconds; checked against Duration's range below
	for _, part := range []struct {
		s    string
		secs float64
	}{{m[2], 86400}, {m[4], 3600}, {m[5], 60}, {m[6], 1}} {
		if part.s == "" {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimPrefix(part.s, "+"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: too long", s)
		}
		total += float64(v) * part.secs
	}
	var nanos int64
	if m[7] != "" {
		frac := (m[7] + "000000000")[:9]
		nanos, _ = strconv.ParseInt(frac, 10, 64)
		if strings.HasPrefix(m[6], "-") {
			nanos = -nanos
		}
	}
	if m[1] == "-" {
		total, nanos = -total, -nanos
	}
	if math.Abs(total) > float64(math.MaxInt64/int64(time.Second))-1 {
		return 0, fmt.Errorf("%q: too long", s)
	}
	return time.Duration(total)*time.Second + time.Duration(nanos), nil
}
