package usage

import (
	"errors"
	"regexp"
)

// Option names a command-line option by its key, "interval". The library
// packages (ingest to analysis) name options by key, never by a flag's
// spelling: the CLI says how an option is given (Render), and a message
// that tells the user which option to change names it through Render
// (fmt's %s, or String), so that the words people read are the CLI's.
type Option string

// The options the library names: each key is the name of a flag of the
// CLI (cmd/tunetimeout tests that every one is).
const (
	Aggregate             Option = "aggregate"
	Arrivals              Option = "arrivals"
	Attempts              Option = "attempts"
	BackoffBase           Option = "backoff-base"
	BackoffCap            Option = "backoff-cap"
	BasicAuthPasswordEnv  Option = "basic-auth-password-env"
	BasicAuthPasswordFile Option = "basic-auth-password-file"
	BasicAuthUser         Option = "basic-auth-user"
	BearerTokenEnv        Option = "bearer-token-env"
	BearerTokenFile       Option = "bearer-token-file"
	By                    Option = "by"
	CAFile                Option = "ca-file"
	Candidates            Option = "candidates"
	Capacity              Option = "capacity"
	Chain                 Option = "chain"
	Clients               Option = "clients"
	Column                Option = "column"
	Confidence            Option = "confidence"
	ConfigFormat          Option = "config-format"
	Data                  Option = "data"
	Deadline              Option = "deadline"
	Dialect               Option = "dialect"
	DropExpired           Option = "drop-expired"
	EmitDir               Option = "emit-dir"
	FalseTimeouts         Option = "false-timeouts"
	Field                 Option = "field"
	Follow                Option = "follow"
	For                   Option = "for"
	From                  Option = "from"
	Headroom              Option = "headroom"
	Hedge                 Option = "hedge"
	Herd                  Option = "herd"
	Idempotent            Option = "idempotent"
	IdempotentMethods     Option = "idempotent-methods"
	IncludeErrors         Option = "include-errors"
	Input                 Option = "input"
	Interval              Option = "interval"
	Latency               Option = "latency"
	Limit                 Option = "limit"
	LinkerdResource       Option = "linkerd-resource"
	LogFormat             Option = "log-format"
	LogFormatName         Option = "log-format-name"
	Lookback              Option = "lookback"
	Map                   Option = "map"
	Max                   Option = "max"
	MaxFetchBytes         Option = "max-fetch-bytes"
	MaxFetchTime          Option = "max-fetch-time"
	MaxGroups             Option = "max-groups"
	MaxResponseBytes      Option = "max-response-bytes"
	MaxSearches           Option = "max-searches"
	MaxTraces             Option = "max-traces"
	MethodField           Option = "method-field"
	Metric                Option = "metric"
	NginxConf             Option = "nginx-conf"
	Operation             Option = "operation"
	PathField             Option = "path-field"
	Plan                  Option = "plan"
	Pool                  Option = "pool"
	Profile               Option = "profile"
	Query                 Option = "query"
	QueryTimeout          Option = "query-timeout"
	Rate                  Option = "rate"
	RecoverWithin         Option = "recover-within"
	RequestsMetric        Option = "requests-metric"
	RetryBudget           Option = "retry-budget"
	RetryOn               Option = "retry-on"
	RoutePattern          Option = "route-pattern"
	RTT                   Option = "rtt"
	Selector              Option = "selector"
	Service               Option = "service"
	SpanKind              Option = "span-kind"
	StatusColumn          Option = "status-column"
	StatusField           Option = "status-field"
	Step                  Option = "step"
	Strict                Option = "strict"
	Suggest               Option = "suggest"
	Table                 Option = "table"
	Tags                  Option = "tags"
	TestOut               Option = "test-out"
	Time                  Option = "time"
	TimeColumn            Option = "time-column"
	TimeField             Option = "time-field"
	Timeout               Option = "timeout"
	To                    Option = "to"
	Topology              Option = "topology"
	Trigger               Option = "trigger"
	Unit                  Option = "unit"
	URL                   Option = "url"
	Window                Option = "window"
	WindowPrecision       Option = "window-precision"
	Windows               Option = "windows"
	Workers               Option = "workers"
)

// Options lists every option declared above, for the CLI's test that each
// is one of its flags.
func Options() []Option {
	return []Option{Aggregate, Arrivals, Attempts, BackoffBase, BackoffCap, BasicAuthPasswordEnv, BasicAuthPasswordFile,
		BasicAuthUser, BearerTokenEnv, BearerTokenFile, By, CAFile, Candidates, Capacity, Chain, Clients, Column,
		Confidence, ConfigFormat, Data, Deadline, Dialect, DropExpired, EmitDir, FalseTimeouts, Field, Follow, For,
		From, Headroom, Hedge, Herd, Idempotent, IdempotentMethods, IncludeErrors, Input, Interval, Latency, Limit,
		LinkerdResource, LogFormat, LogFormatName, Lookback, Map, Max, MaxFetchBytes, MaxFetchTime, MaxGroups,
		MaxResponseBytes, MaxSearches, MaxTraces, MethodField, Metric, NginxConf, Operation, PathField, Plan, Pool,
		Profile, Query, QueryTimeout, Rate, RecoverWithin, RequestsMetric, RetryBudget, RetryOn, RoutePattern, RTT,
		Selector, Service, SpanKind, StatusColumn, StatusField, Step, Strict, Suggest, Table, Tags, TestOut, Time,
		TimeColumn, TimeField, Timeout, To, Topology, Trigger, Unit, URL, Window, WindowPrecision, Windows, Workers}
}

// Render writes an option as people give it on the command line. The CLI
// sets it once, before it runs a command (cmd/tunetimeout/options.go);
// until then an option is written as the long flag of its key,
// "--interval".
var Render = func(o Option) string { return "--" + string(o) }

// optionInText is an option named in a text by its key: {key}.
var optionInText = regexp.MustCompile(`\{([a-z][a-z-]*)\}`)

// Expand writes the options a text names by key, "{latency}", as Render
// writes them: for help written before the CLI sets Render (a format's
// summary, a finding's, a metric's help), expanded when it is shown.
func Expand(text string) string {
	return optionInText.ReplaceAllStringFunc(text, func(m string) string {
		return Option(m[1 : len(m)-1]).String()
	})
}

// Named lists the options a text names by key ({key}), in order: a test
// holds each to be one of Options.
func Named(text string) []Option {
	var out []Option
	for _, m := range optionInText.FindAllStringSubmatch(text, -1) {
		out = append(out, Option(m[1]))
	}
	return out
}

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
