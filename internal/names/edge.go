package names

import "strings"

// Edge reads a group's name as an edge of the call graph: spans grouped by
// caller and callee are named "caller callee" (the group rule above, with
// --by caller,callee). ok is false for a name that is not two words.
// The words are the name's as written, a quoted one still quoted, and
// they are split where strings.Fields splits, as every reader of an edge
// always split them: a quoted value with a space in it ("\"a b\" c") is
// three words, so not an edge.
//
// Every package that reads an edge out of a group's name reads it here,
// and EdgeName writes one.
func Edge(name string) (caller, callee string, ok bool) {
	f := strings.Fields(name)
	if len(f) != 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// EdgeName is the group name of the edge from caller to callee, both named
// as the span decoders name them for grouping (ingest.SpanLink: "-" for
// one a span lacks): the two joined by a space, which Edge reads back.
func EdgeName(caller, callee string) string {
	return caller + " " + callee
}
