package names

import (
	"strconv"
	"strings"
)

// Edge reads a group's name as an edge of the call graph: spans grouped by
// caller and callee are named "caller callee" (the group rule above, with
// --by caller,callee). ok is false for a name that is not two values.
// The words are the name's as written, a quoted one still quoted: a
// service whose name holds a space is one quoted value ("\"a b\" c" is
// the edge from "a b" to c). A name the group rule cannot have written
// (two spaces in a row, as a person may type one) is split where
// strings.Fields splits.
//
// Every package that reads an edge out of a group's name reads it here,
// and EdgeName writes one.
func Edge(name string) (caller, callee string, ok bool) {
	if v, err := Split(name); err == nil {
		if len(v) != 2 {
			return "", "", false
		}
		caller = name
		if name[0] == '"' {
			caller, _ = strconv.QuotedPrefix(name)
		} else {
			caller, _, _ = strings.Cut(name, " ")
		}
		return caller, name[len(caller)+1:], true
	}
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
