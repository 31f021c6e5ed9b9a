package ingest

// StatusRule decides which samples count for latency (DOMAIN.md section 1):
// fast failures say nothing about how long good calls take and are excluded;
// calls that ended because they were slow are kept as right-censored.
type StatusRule struct {
	// IncludeErrors keeps 4xx and 5xx responses in the latency sample.
	IncludeErrors bool
}

// Classify marks timeout statuses as censored and returns "" when s counts
// for latency, or the reason it is excluded (used as a key in reports, e.g.
// "status 5xx").
func (r StatusRule) Classify(s *Sample) (excluded string) {
	panic("unimplemented")
}
