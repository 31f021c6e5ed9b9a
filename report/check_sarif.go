package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// SARIFSchema is the URI of the SARIF 2.1.0 schema (OASIS Standard with
// Errata 01) a SARIF log of check names in its $schema.
const SARIFSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

// FindingsDoc is where docs/findings.md, which explains every finding code
// under a heading of its own, is read on GitHub.
const FindingsDoc = "https://github.com/tunetimeout/tunetimeout/blob/main/docs/findings.md"

// FindingHelpURI is the address of a code's section of docs/findings.md:
// the anchor GitHub makes of the heading "### TT-CHECK-..." is the code in
// lower case (its letters, digits and hyphens stay as they are).
func FindingHelpURI(code string) string {
	return FindingsDoc + "#" + strings.ToLower(code)
}

// FingerprintKey names the partial fingerprint of a check result: a
// versioned hierarchical string (SARIF 2.1.0 §3.27.17, §3.5.4.2).
const FingerprintKey = "tunetimeoutCheck/v1"

// The SARIF log check writes: the subset of SARIF 2.1.0 it uses.
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool        sarifTool         `json:"tool"`
		Invocations []sarifInvocation `json:"invocations"`
		Results     []sarifResult     `json:"results"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string            `json:"name"`
		InformationURI string            `json:"informationUri"`
		Version        string            `json:"version"`
		Rules          []sarifDescriptor `json:"rules"`
		Notifications  []sarifDescriptor `json:"notifications,omitempty"`
	}
	sarifDescriptor struct {
		ID                   string             `json:"id"`
		ShortDescription     sarifMessage       `json:"shortDescription"`
		HelpURI              string             `json:"helpUri,omitempty"`
		DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
	}
	sarifConfiguration struct {
		Level string `json:"level"`
	}
	sarifMessage struct {
		Text string `json:"text"`
	}
	sarifInvocation struct {
		ExecutionSuccessful        bool                `json:"executionSuccessful"`
		ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
	}
	sarifNotification struct {
		Descriptor sarifReference  `json:"descriptor"`
		Level      string          `json:"level"`
		Message    sarifMessage    `json:"message"`
		Locations  []sarifLocation `json:"locations,omitempty"`
	}
	sarifReference struct {
		ID    string `json:"id"`
		Index int    `json:"index"`
	}
	sarifResult struct {
		RuleID              string            `json:"ruleId"`
		RuleIndex           int               `json:"ruleIndex"`
		Level               string            `json:"level"`
		Message             sarifMessage      `json:"message"`
		Locations           []sarifLocation   `json:"locations"`
		PartialFingerprints map[string]string `json:"partialFingerprints"`
		// BaselineState is "unchanged" for a finding of the --baseline
		// (section 3.27.24); absent otherwise.
		BaselineState string          `json:"baselineState,omitempty"`
		Properties    sarifProperties `json:"properties"`
	}
	sarifLocation struct {
		PhysicalLocation sarifPhysical `json:"physicalLocation"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           sarifRegion   `json:"region"`
	}
	sarifArtifact struct {
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId,omitempty"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
	sarifProperties struct {
		Target   string         `json:"target"`
		Object   string         `json:"object"`
		Group    string         `json:"group,omitempty"`
		Measured finding.Fields `json:"measured"`
	}
)

// The notifications of a check's SARIF log, declared in
// tool.driver.notifications in this order: they are not finding codes,
// which name results, so their ids are in lower case.
func sarifNotifications() []struct{ id, level, summary string } {
	return []struct{ id, level, summary string }{
		{"unmatched-config", "warning", fmt.Sprintf("a config object no group of the data maps to: it was not checked (%s OBJECT=GROUP, or data grouped by route)", usage.Map)},
		{"unmatched-group", "warning", "a group of the data no config object maps to: no config was checked against it"},
		{"config-note", "note", "what was read and not checked"},
	}
}

// sarifLevel is the SARIF level of a severity (§3.27.10): error and
// warning are themselves, info is "note".
func sarifLevel(severity string) string {
	switch severity {
	case string(finding.Error):
		return "error"
	case string(finding.Info):
		return "note"
	}
	return "warning"
}

// WriteCheckSARIF writes the check as a SARIF 2.1.0 log for code scanning
// (GitHub's upload-sarif): one run whose driver declares a rule for each
// finding code used, in the order of docs/findings.md, and one result for
// each finding at its file and line. Files given as relative paths are
// written as relative URIs with uriBaseId %SRCROOT%, which code scanning
// reads from the repository root; absolute ones as file URIs. Each result
// carries a partial fingerprint of its code, file, object and group (and
// its rank among the findings that share them), not its line, so that an
// alert follows a finding when the lines above it change. The config
// objects and groups that met nothing, and the notes, are notifications
// of the run's invocation (§3.20.21): conditions of the check, not
// problems in a config.
func WriteCheckSARIF(w io.Writer, c *Check) error {
	version := c.ToolVersion
	if version == "" {
		version = "dev"
	}
	var used []string
	for _, f := range c.Findings {
		if !slices.Contains(used, f.Code) {
			used = append(used, f.Code)
		}
	}
	rules := []sarifDescriptor{}
	for _, d := range finding.Codes() {
		if slices.Contains(used, string(d.Code)) {
			rules = append(rules, sarifRule(string(d.Code)))
		}
	}
	for _, code := range used { // a code codes.go does not declare, last
		if _, ok := finding.Lookup(finding.Code(code)); !ok {
			rules = append(rules, sarifRule(code))
		}
	}
	index := map[string]int{}
	for i, r := range rules {
		index[r.ID] = i
	}

	results := []sarifResult{}
	seen := map[string]int{}
	for _, f := range c.Findings {
		uri, base := sarifURI(f.File)
		key := strings.Join([]string{f.Code, uri, f.Object, f.Group}, "\x00")
		seen[key]++
		sum := sha256.Sum256([]byte(key + "\x00" + strconv.Itoa(seen[key])))
		text := f.Object
		if f.Group != "" {
			text += " (" + f.Group + ")"
		}
		measured := f.Measured
		if measured == nil {
			measured = finding.Fields{}
		}
		results = append(results, sarifResult{
			RuleID:              f.Code,
			RuleIndex:           index[f.Code],
			Level:               sarifLevel(f.Severity),
			Message:             sarifMessage{Text: text + ": " + f.Message},
			Locations:           []sarifLocation{sarifAt(uri, base, f.Line)},
			PartialFingerprints: map[string]string{FingerprintKey: hex.EncodeToString(sum[:])},
			Properties:          sarifProperties{Target: f.Target, Object: f.Object, Group: f.Group, Measured: measured},
		})
		if f.Baseline {
			results[len(results)-1].BaselineState = "unchanged"
		}
	}

	notifications := sarifNotifications()
	var notes []sarifNotification
	note := func(i int, text string, at []sarifLocation) {
		n := notifications[i]
		notes = append(notes, sarifNotification{Descriptor: sarifReference{ID: n.id, Index: i}, Level: n.level,
			Message: sarifMessage{Text: text}, Locations: at})
	}
	for _, o := range c.UnmatchedConfig {
		uri, base := sarifURI(o.File)
		note(0, fmt.Sprintf("%s %s: no group of the data maps to it, so it was not checked (%s OBJECT=GROUP, or data grouped by route)", o.Kind, o.Object, usage.Map),
			[]sarifLocation{sarifAt(uri, base, o.Line)})
	}
	for _, g := range c.UnmatchedGroups {
		note(1, fmt.Sprintf("group %s: no config object maps to it", g), nil)
	}
	for _, n := range c.Notes {
		note(2, n, nil)
	}
	var descriptors []sarifDescriptor
	for _, n := range notifications {
		descriptors = append(descriptors, sarifDescriptor{ID: n.id, ShortDescription: sarifMessage{Text: n.summary},
			DefaultConfiguration: sarifConfiguration{Level: n.level}})
	}

	doc := sarifLog{
		Schema:  SARIFSchema,
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool: sarifTool{Driver: sarifDriver{
				Name:           "tunetimeout",
				InformationURI: "https://github.com/tunetimeout/tunetimeout",
				Version:        version,
				Rules:          rules,
				Notifications:  descriptors,
			}},
			Invocations: []sarifInvocation{{ExecutionSuccessful: true, ToolExecutionNotifications: notes}},
			Results:     results,
		}},
	}
	return writeJSON(w, doc)
}

// sarifRule is the rule of a finding code: its summary, its section of
// docs/findings.md, and its severity as the default level.
func sarifRule(code string) sarifDescriptor {
	d, ok := finding.Lookup(finding.Code(code))
	summary := d.Summary
	if !ok {
		summary = code
		d.Severity = finding.Warning
	}
	return sarifDescriptor{ID: code, ShortDescription: sarifMessage{Text: summary}, HelpURI: FindingHelpURI(code),
		DefaultConfiguration: sarifConfiguration{Level: sarifLevel(string(d.Severity))}}
}

// sarifURI is the artifact location of a config file as check was given
// it: a relative path is a relative reference with forward slashes (and
// any %, space or # escaped), against %SRCROOT%, the root of the source
// tree (§3.4.4, §3.4.7), which code scanning takes to be the repository's;
// an absolute path is a file URI, without uriBaseId (§3.4.4, §3.10).
func sarifURI(file string) (uri, base string) {
	p := filepath.ToSlash(file)
	if filepath.IsAbs(file) {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p // C:/x: file:///C:/x
		}
		return (&url.URL{Scheme: "file", Path: p}).String(), ""
	}
	return (&url.URL{Path: path.Clean(p)}).String(), "%SRCROOT%"
}

// sarifAt is the location of a line of a file. A result must have a
// region for code scanning to show it on a line (a physical location
// without one means the whole file, §3.29.4): a position without a line
// is written as line 1.
func sarifAt(uri, base string, line int) sarifLocation {
	return sarifLocation{PhysicalLocation: sarifPhysical{
		ArtifactLocation: sarifArtifact{URI: uri, URIBaseID: base},
		Region:           sarifRegion{StartLine: max(line, 1)},
	}}
}
