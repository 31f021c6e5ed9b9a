package ingest

// StatusRule decides which samples count for latency (DOMAIN.md section 1):
// fast failures say nothing about how long good calls take and are excluded;
// calls that ended because they were slow are kept as right-censored.
type StatusRule struct {
	// IncludeErrors keeps 4xx and 5xx responses in the latency sample.
	IncludeErrors bool
}

// Reasons returned by Classify.
const (
	Excluded4xx = "status 4xx"
	Excluded5xx = "status 5xx"
)

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

// Classify marks timeout statuses as censored and returns "" when s counts
// for latency, or the reason it is excluded (used as a key in reports, e.g.
// "status 5xx").
//
// Timeout statuses (see IsTimeoutStatus) always count, with s.Censored set.
// Unless IncludeErrors is set, other 4xx and 5xx statuses are excluded.
// Everything else counts: 1xx-3xx, 0 (unknown) and codes outside 100-599.
// Classify never clears s.Censored: a decoder may have set it from other
// evidence (e.g. a proxy's termination state).
func (r StatusRule) Classify(s *Sample) (excluded string) {
	if IsTimeoutStatus(s.Status) {
		s.Censored = true
		return ""
	}
	if r.IncludeErrors {
		return ""
	}
	switch {
	case s.Status >= 400 && s.Status <= 499:
		return Excluded4xx
	case s.Status >= 500 && s.Status <= 599:
		return Excluded5xx
	}
	return ""
}
