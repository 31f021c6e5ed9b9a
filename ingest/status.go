package ingest

import (
	"fmt"
	"strconv"
	"strings"
)

// StatusAction is what the status rule does with a call of one status.
type StatusAction int8

const (
	statusDefault StatusAction = iota // the built-in rule decides
	// Count: the call's duration is a latency sample.
	Count
	// Exclude: a fast failure; its duration says nothing about good calls.
	Exclude
	// Censor: the call ended because it was slow; its duration is a lower bound.
	Censor
)

var actionNames = map[string]StatusAction{"count": Count, "exclude": Exclude, "censor": Censor}

// StatusRule decides which samples count for latency (docs/method.md#3-censoring):
// fast failures say nothing about how long good calls take and are excluded;
// calls that ended because they were slow are kept as right-censored.
//
// The built-in rule: 1xx-4xx count (a 404 is an answer the client waited
// for; issue 3 counts 4xx by default, as docs/method.md#3-censoring says,
// and --status excludes them for who prefers that); 5xx are
// excluded; the timeout statuses of IsTimeoutStatus are censored; an unknown
// status (0) counts. A decoder's own verdict comes first: a sample it marked
// Excluded (an Envoy UF) is excluded and one it marked Censored (a HAProxy
// server timeout) is censored, whatever its status.
//
// The zero StatusRule is the built-in rule.
type StatusRule struct {
	// IncludeErrors counts 4xx and 5xx answers (timeouts stay censored).
	IncludeErrors bool
	// override holds the user's --status choices by code; statusDefault
	// where the user said nothing.
	override [1000]StatusAction
}

// IsTimeoutStatus reports whether status means the call ended because it was
// slow, so its duration is a lower bound:
//
//   - 408 Request Timeout: the server gave up waiting for the request;
//   - 499 (nginx): the client closed the connection, it gave up waiting;
//   - 504 Gateway Timeout: a proxy gave up waiting for the upstream;
//   - 524 (Cloudflare): the origin did not answer in time;
//   - 598, 599: network read / connect timeout, used by some proxies.
func IsTimeoutStatus(status int) bool {
	switch status {
	case 408, 499, 504, 524, 598, 599:
		return true
	}
	return false
}

// Reasons returned by Classify for statuses.
const (
	Excluded4xx = "status 4xx"
	Excluded5xx = "status 5xx"
)

// ParseStatusRule reads --status: space- or semicolon-separated clauses
// action=list, where action is count, exclude or censor and list holds
// status codes (404) and classes (4xx), comma-separated. Later clauses win;
// a code beats its class. What the spec does not mention keeps the built-in
// rule. "exclude=4xx count=404" excludes client errors but keeps not-found.
func ParseStatusRule(spec string) (StatusRule, error) {
	var r StatusRule
	var classes [10]StatusAction
	var codes []struct {
		code   int
		action StatusAction
	}
	for _, clause := range strings.FieldsFunc(spec, func(c rune) bool { return c == ' ' || c == ';' }) {
		name, list, ok := strings.Cut(clause, "=")
		action, known := actionNames[strings.ToLower(name)]
		if !ok || !known || list == "" {
			return r, fmt.Errorf("status rule %q: want action=codes with action count, exclude or censor (e.g. \"exclude=4xx count=404\")", clause)
		}
		for _, item := range strings.Split(list, ",") {
			item = strings.ToLower(strings.TrimSpace(item))
			if len(item) == 3 && item[0] >= '1' && item[0] <= '9' && item[1:] == "xx" {
				classes[item[0]-'0'] = action
				continue
			}
			code, err := strconv.Atoi(item)
			if err != nil || code < 100 || code > 999 {
				return r, fmt.Errorf("status rule %q: %q is neither a status code (100-999) nor a class (4xx)", clause, item)
			}
			codes = append(codes, struct {
				code   int
				action StatusAction
			}{code, action})
		}
	}
	for code := 100; code < len(r.override); code++ {
		r.override[code] = classes[code/100]
	}
	for _, c := range codes {
		r.override[c.code] = c.action
	}
	return r, nil
}

// Action returns what the rule does with a status.
func (r *StatusRule) Action(status int) StatusAction {
	if status >= 0 && status < len(r.override) && r.override[status] != statusDefault {
		return r.override[status]
	}
	switch {
	case IsTimeoutStatus(status):
		return Censor
	case status >= 400 && status <= 599 && r.IncludeErrors:
		return Count
	case status >= 500 && status <= 599:
		return Exclude
	}
	return Count
}

// Classify applies the rule to s: it returns "" when s counts for latency
// (setting s.Censored for a censored status), or the reason it is excluded
// (a key in reports: "status 5xx", or the decoder's own reason).
func (r *StatusRule) Classify(s *Sample) (excluded string) {
	switch {
	case s.Excluded != "":
		return s.Excluded
	case s.Censored:
		return ""
	}
	switch r.Action(s.Status) {
	case Censor:
		s.Censored = true
	case Exclude:
		if s.Status >= 100 && s.Status <= 999 {
			return statusClassReason(s.Status)
		}
		return "status " + strconv.Itoa(s.Status)
	}
	return ""
}

// statusClassReason returns "status 5xx" and its kind without allocating.
func statusClassReason(status int) string {
	switch status / 100 {
	case 4:
		return Excluded4xx
	case 5:
		return Excluded5xx
	}
	return "status " + strconv.Itoa(status/100) + "xx"
}
