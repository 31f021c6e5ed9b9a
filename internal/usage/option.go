package usage

import "errors"

// Option names a command-line option by its key, "interval". The library
// packages (ingest to analysis) name options by key, never by a flag's
// spelling: the CLI says how an option is given (Render), and a message
// that tells the user which option to change names it through Render
// (fmt's %s, or String), so that the words people read are the CLI's.
type Option string

// The options the library names: each key is the name of a flag of the
// CLI (cmd/tunetimeout tests that every one is).
const (
	Aggregate     Option = "aggregate"
	Attempts      Option = "attempts"
	BackoffBase   Option = "backoff-base"
	BackoffCap    Option = "backoff-cap"
	By            Option = "by"
	Candidates    Option = "candidates"
	Capacity      Option = "capacity"
	Chain         Option = "chain"
	Clients       Option = "clients"
	ConfigFormat  Option = "config-format"
	Data          Option = "data"
	Deadline      Option = "deadline"
	DropExpired   Option = "drop-expired"
	EmitDir       Option = "emit-dir"
	FalseTimeouts Option = "false-timeouts"
	For           Option = "for"
	From          Option = "from"
	Headroom      Option = "headroom"
	Herd          Option = "herd"
	IncludeErrors Option = "include-errors"
	Interval      Option = "interval"
	Latency       Option = "latency"
	MaxGroups     Option = "max-groups"
	Metric        Option = "metric"
	Plan          Option = "plan"
	Profile       Option = "profile"
	Rate          Option = "rate"
	RetryBudget   Option = "retry-budget"
	Step          Option = "step"
	Strict        Option = "strict"
	Time          Option = "time"
	To            Option = "to"
	Topology      Option = "topology"
	Trigger       Option = "trigger"
	Unit          Option = "unit"
	Window        Option = "window"
	Workers       Option = "workers"
)

// Options lists every option declared above, for the CLI's test that each
// is one of its flags.
func Options() []Option {
	return []Option{Aggregate, Attempts, BackoffBase, BackoffCap, By, Candidates, Capacity, Chain, Clients, ConfigFormat, Data,
		Deadline, DropExpired, EmitDir, FalseTimeouts, For, From, Headroom, Herd, IncludeErrors, Interval, Latency, MaxGroups,
		Metric, Plan, Profile, Rate, RetryBudget, Step, Strict, Time, To, Topology, Trigger, Unit, Window, Workers}
}

// Render writes an option as people give it on the command line. The CLI
// sets it once, before it runs a command (cmd/tunetimeout/options.go);
// until then an option is written as the long flag of its key,
// "--interval".
var Render = func(o Option) string { return "--" + string(o) }

// String is the option as Render writes it.
func (o Option) String() string { return Render(o) }

// OptionError is an error about the value given to one option: its
// message is Err's, and Option says which option it is about, by key,
// for a caller that points at it.
type OptionError struct {
	Option Option
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// About marks err as being about option o; nil stays nil. A usage error
// (Errorf) stays one: errors.As finds it through the mark.
func About(o Option, err error) error {
	if err == nil {
		return nil
	}
	return &OptionError{Option: o, Err: err}
}

// OptionOf returns the option err is about (About), if any.
func OptionOf(err error) (Option, bool) {
	var oe *OptionError
	if errors.As(err, &oe) {
		return oe.Option, true
	}
	return "", false
}
