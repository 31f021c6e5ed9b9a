package report

import "github.com/tunetimeout/tunetimeout/internal/finding"

// Finding is one warning or note with a stable code, a severity, its
// numbers and its message (internal/finding; every code is listed in
// docs/findings.md). In JSON it is one object: code, severity, message,
// and the numbers by name beside them (docs/findings.md has an example).
type Finding = finding.Finding
