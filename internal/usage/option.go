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
	Aggregate        Option = "aggregate"
	Arrivals         Option = "arrivals"
	Attempts         Option = "attempts"
	BackoffBase      Option = "backoff-base"
	BackoffCap       Option = "backoff-cap"
	BasicAuthUser    Option = "basic-auth-user"
	BearerTokenEnv   Option = "bearer-token-env"
	BearerTokenFile  Option = "bearer-token-file"
	By               Option = "by"
	Candidates       Option = "candidates"
	Capacity         Option = "capacity"
	Chain            Option = "chain"
	Clients          Option = "clients"
	Column           Option = "column"
	ConfigFormat     Option = "config-format"
	Data             Option = "data"
	Deadline         Option = "deadline"
	Dialect          Option = "dialect"
	DropExpired      Option = "drop-expired"
	EmitDir          Option = "emit-dir"
	FalseTimeouts    Option = "false-timeouts"
	Field            Option = "field"
	For              Option = "for"
	From             Option = "from"
	Headroom         Option = "headroom"
	Herd             Option = "herd"
	IncludeErrors    Option = "include-errors"
	Input            Option = "input"
	Interval         Option = "interval"
	Latency          Option = "latency"
	Limit            Option = "limit"
	LogFormat        Option = "log-format"
	Lookback         Option = "lookback"
	MaxFetchBytes    Option = "max-fetch-bytes"
	MaxFetchTime     Option = "max-fetch-time"
	MaxGroups        Option = "max-groups"
	MaxResponseBytes Option = "max-response-bytes"
	MaxSearches      Option = "max-searches"
	MaxTraces        Option = "max-traces"
	Metric           Option = "metric"
	NginxConf        Option = "nginx-conf"
	Operation        Option = "operation"
	Plan             Option = "plan"
	Profile          Option = "profile"
	Query            Option = "query"
	QueryTimeout     Option = "query-timeout"
	Rate             Option = "rate"
	RetryBudget      Option = "retry-budget"
	RoutePattern     Option = "route-pattern"
	Selector         Option = "selector"
	Service          Option = "service"
	SpanKind         Option = "span-kind"
	StatusColumn     Option = "status-column"
	Step             Option = "step"
	Strict           Option = "strict"
	Table            Option = "table"
	Tags             Option = "tags"
	Time             Option = "time"
	TimeColumn       Option = "time-column"
	To               Option = "to"
	Topology         Option = "topology"
	Trigger          Option = "trigger"
	Unit             Option = "unit"
	URL              Option = "url"
	Window           Option = "window"
	Workers          Option = "workers"
)

// Options lists every option declared above, for the CLI's test that each
// is one of its flags.
func Options() []Option {
	return []Option{Aggregate, Arrivals, Attempts, BackoffBase, BackoffCap, BasicAuthUser, BearerTokenEnv, BearerTokenFile, By,
		Candidates, Capacity, Chain, Clients, Column, ConfigFormat, Data, Deadline, Dialect, DropExpired, EmitDir,
		FalseTimeouts, Field, For, From, Headroom, Herd, IncludeErrors, Input, Interval, Latency, Limit, LogFormat,
		Lookback, MaxFetchBytes, MaxFetchTime, MaxGroups, MaxResponseBytes, MaxSearches, MaxTraces, Metric, NginxConf,
		Operation, Plan, Profile, Query, QueryTimeout, Rate, RetryBudget, RoutePattern, Selector, Service, SpanKind,
		StatusColumn, Step, Strict, Table, Tags, Time, TimeColumn, To, Topology, Trigger, Unit, URL, Window, Workers}
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
