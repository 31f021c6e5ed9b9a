package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Fix is the smallest edit of a config file that brings one value to the
// recommendation (check --suggest): on Line, Old replaced by New; or,
// when Old is empty, Insert as a new line after Line (a value the file
// left to the target's default).
type Fix struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
	Insert string `json:"insert,omitempty"`
	// Opens is what Line must end with for Insert to land inside its
	// block ("{" for nginx); "" when any line will do.
	Opens string `json:"-"`
}

// WriteFixes writes the fixes of c as unified diffs, one per file, that
// `patch -p0` applies; read gives a config file's contents. Fixes that no
// longer fit the file (the value is not on its line) are left out and
// counted in the returned number.
func WriteFixes(w io.Writer, c *Check, read func(file string) ([]byte, error)) (skipped int, err error) {
	byFile := map[string][]Fix{}
	for _, f := range c.Findings {
		if f.Fix != nil && !f.Baseline {
			byFile[f.Fix.File] = append(byFile[f.Fix.File], *f.Fix)
		}
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, file := range files {
		if err := diffHeaderName(file); err != nil {
			return 0, err
		}
	}
	for _, file := range files {
		data, err := read(file)
		if err != nil {
			return skipped, err
		}
		diff, n := unifiedDiff(file, string(data), byFile[file])
		skipped += n
		if _, err := io.WriteString(w, diff); err != nil {
			return skipped, err
		}
	}
	return skipped, nil
}

// diffHeaderName refuses a file name that cannot stand raw in the "---"
// and "+++" lines of a diff: patch takes the name up to the end of its
// line, or to a tab (GNU patch's pch.c), so a newline in it starts
// headers of its own ("x\n--- victim.conf\n+++ victim.conf\n.conf" has
// patch -p0 edit victim.conf), and other control and bidirectional
// characters hide what a reviewer reads. git diff quotes such names in
// C style instead (git's quote.c, core.quotePath), which GNU patch reads
// but POSIX patch does not: refused, the name is safe for every patch.
func diffHeaderName(file string) error {
	for _, r := range file {
		if escape.Unsafe(r) {
			return usage.About(usage.Suggest, fmt.Errorf("%s: config file %s: its name holds a control character (%U), which a diff header cannot hold safely: rename the file", usage.Suggest, escape.Quote(file), r))
		}
	}
	return nil
}

// unifiedDiff applies fixes to text and writes the difference with three
// lines of context; it returns how many fixes did not apply.
func unifiedDiff(file, text string, fixes []Fix) (string, int) {
	old := strings.SplitAfter(text, "\n")
	if len(old) > 0 && old[len(old)-1] == "" {
		old = old[:len(old)-1]
	}
	// One edit per line: the first fix of a line wins; another fix of
	// the same line is counted as left out.
	sort.SliceStable(fixes, func(i, j int) bool { return fixes[i].Line < fixes[j].Line })
	type edit struct {
		line    int // 0-based index in old
		replace string
		insert  string
	}
	var edits []edit
	skipped := 0
	seen := map[int]bool{}
	done := map[Fix]bool{}
	for _, f := range fixes {
		if done[f] {
			continue // the same edit, suggested by two findings of one value
		}
		done[f] = true
		i := f.Line - 1
		if i < 0 || i >= len(old) || seen[i] {
			skipped++
			continue
		}
		e := edit{line: i}
		switch {
		case f.Old != "" && strings.Contains(old[i], f.Old):
			e.replace = strings.Replace(old[i], f.Old, f.New, 1)
		case f.Old == "" && f.Insert != "" && strings.HasSuffix(strings.TrimRight(stripComment(old[i]), " \t\r\n"), f.Opens):
			e.insert = indentAfter(old, i) + f.Insert + "\n"
		default:
			skipped++
			continue
		}
		seen[i] = true
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return "", skipped
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", file, file)
	const ctx = 3
	shift := 0 // lines added before the hunk in the new file
	// The context runs ctx lines either side of what changes: a replaced
	// line, or the gap after a line where one is added (patch wants as
	// many lines of context after a change as before it, or it fuzzes).
	first := func(e edit) int { // the first old line after the leading context
		if e.insert != "" {
			return e.line + 1
		}
		return e.line
	}
	last := func(e edit) int { return e.line + 1 } // the first old line after the change
	for k := 0; k < len(edits); {
		// A hunk holds the edits whose contexts touch.
		start := max(first(edits[k])-ctx, 0)
		end := k
		for end+1 < len(edits) && first(edits[end+1])-ctx <= last(edits[end])+ctx {
			end++
		}
		stop := min(last(edits[end])+ctx, len(old)) // exclusive
		var body strings.Builder
		oldN, newN, added := 0, 0, 0
		next := k
		for i := start; i < stop; i++ {
			line := old[i]
			nl := ""
			if !strings.HasSuffix(line, "\n") {
				nl = "\n\\ No newline at end of file\n"
			}
			if next <= end && edits[next].line == i {
				e := edits[next]
				next++
				if e.replace != "" {
					body.WriteString("-" + line + nl + "+" + e.replace + nl)
					oldN++
					newN++
					continue
				}
				body.WriteString(" " + line + nl + "+" + e.insert)
				oldN++
				newN += 2
				added++
				continue
			}
			body.WriteString(" " + line + nl)
			oldN++
			newN++
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n%s", start+1, oldN, start+1+shift, newN, body.String())
		shift += added
		k = end + 1
	}
	return b.String(), skipped
}

// stripComment cuts a "#" comment off a config line (nginx, HAProxy, YAML
// all start comments so; a "#" inside quotes is rare enough in the lines
// an edit goes after).
func stripComment(line string) string {
	if i := strings.Index(line, "#"); i >= 0 {
		return line[:i]
	}
	return line
}

// indentAfter is the indentation of a line added after old[i]: that of
// the next line when it is deeper (the block's own), else old[i]'s and
// four spaces.
func indentAfter(old []string, i int) string {
	lead := func(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }
	own := lead(old[i])
	for j := i + 1; j < len(old); j++ {
		if strings.TrimSpace(old[j]) == "" {
			continue
		}
		if next := lead(old[j]); len(next) > len(own) {
			return next
		}
		break
	}
	return own + "    "
}
