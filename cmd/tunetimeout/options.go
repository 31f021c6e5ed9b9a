package main

import "github.com/tunetimeout/tunetimeout/internal/usage"

// The library packages name command-line options by key (usage.Option),
// never by a flag's spelling; this file says how the CLI writes them. Every
// key is the name of a long flag of some command (TestOptionKeysAreFlags),
// so a key is written as that flag: usage.Interval as "--interval". A flag
// renamed here, or given a key of another name, changes every message that
// names it, and nothing in the library.
func init() { usage.Render = flagName }

// flagName is the flag that sets option o, as a user types it.
func flagName(o usage.Option) string { return "--" + string(o) }
