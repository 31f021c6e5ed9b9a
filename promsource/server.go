package promsource

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Servers Fetch tells apart (Result.Server). All speak the Prometheus HTTP
// API; they differ in what their answers mean: VictoriaMetrics's increase()
// does not extrapolate and its histogram_quantile reads vmrange buckets and
// repairs inconsistent buckets its own way (Group.ServerEstimate).
const (
	ServerPrometheus      = "Prometheus"
	ServerVictoriaMetrics = "VictoriaMetrics"
	ServerThanos          = "Thanos"
	ServerMimir           = "Mimir"
	ServerCortex          = "Cortex"
	ServerUnknown         = "unknown"
)

// ServerInfo is which server answers at a URL.
type ServerInfo struct {
	Name string // one of the Server constants
	// Version is the version the server gives, one printable line of at
	// most maxVersionLen runes; "" when it gives none.
	Version string
}

// Bounds of the detection: it must stay cheap and never hold up a run.
const (
	epBuildInfo       = "/api/v1/status/buildinfo"
	epMetrics         = "/metrics"
	detectTimeout     = 5 * time.Second // both requests, retries included
	maxBuildInfoBytes = 64 << 10
	maxMetricsBytes   = 16 << 20 // VictoriaMetrics 1.79.5 writes about 33 KB
	maxMetricsLine    = 1 << 20
	maxVersionLen     = 64
)

// DetectServer tells which server answers at c.URL and its version, from
// GET /api/v1/status/buildinfo (and, for VictoriaMetrics, its /metrics).
// The server's answers never make it fail: a missing endpoint, an error or
// an answer it cannot read give ServerUnknown. It fails only for a
// Connection that cannot be used (the errors of Fetch).
//
// How the servers answer buildinfo, from their sources:
//
//   - Prometheus (web/api/v1): {"version", "revision", "branch",
//     "buildUser", "buildDate", "goVersion"}, from prometheus/common/version,
//     which fills goVersion at run time. Versions 2.x and 3.x.
//   - Thanos (pkg/api/api.go serveBuildInfo): the same fields, with the
//     Thanos version, 0.x (every Thanos release so far).
//   - Cortex (pkg/api/handlers.go buildInfoHandler): the same fields, with
//     the Cortex version, 1.x; only with -api.build-info-enabled (off by
//     default: 404, so unknown).
//   - Mimir (pkg/util/version/info_handler.go): the same plus "application"
//     ("Grafana Mimir" by default) and "features".
//   - VictoriaMetrics (app/vmselect/main.go): a stub, {"data":{}} up to
//     v1.95 (1.79.5 among them) and {"data":{"version":"2.24.0"}} from
//     v1.96, a Prometheus version it claims so that Grafana picks the right
//     API: never take it for VictoriaMetrics's own. Every VictoriaMetrics
//     answer carries an X-Server-Hostname header (lib/httpserver; v1.122.25
//     and later can turn it off), and its own version is the label of
//     vm_app_version on /metrics ("" in Debian's build of 1.79.5).
//
// Only Prometheus and VictoriaMetrics were tried (tunetimeout's e2e
// tests); Thanos, Mimir and Cortex are told apart by their sources.
func DetectServer(ctx context.Context, c Connection) (ServerInfo, error) {
	cl, err := connect(c)
	if err != nil {
		return ServerInfo{}, err
	}
	return cl.detect(ctx), nil
}

// detect tells the server apart, within detectTimeout.
func (c *client) detect(ctx context.Context) ServerInfo {
	ctx, cancel := context.WithTimeout(ctx, detectTimeout)
	defer cancel()
	status, header, body := c.get(ctx, c.url(epBuildInfo, "").String(), maxBuildInfoBytes)
	info := classify(status, header, body)
	if info.Name == ServerVictoriaMetrics {
		info.Version = c.vmVersion(ctx)
	}
	info.Version = printable(c.secrets.clean(info.Version), maxVersionLen)
	return info
}

// get sends a GET and reads up to limit bytes of the answer; status 0
// without an answer.
func (c *client) get(ctx context.Context, u string, limit int64) (int, http.Header, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		body = nil
	}
	return resp.StatusCode, resp.Header, body
}

// buildInfo is what servers put into buildinfo's data.
type buildInfo struct {
	Application string `json:"application"` // Mimir only
	Version     string `json:"version"`
	Revision    string `json:"revision"`
	GoVersion   string `json:"goVersion"`
}

// vmClaimedVersion is the Prometheus version VictoriaMetrics v1.96 and later
// answer buildinfo with.
const vmClaimedVersion = "2.24.0"

// classify reads buildinfo's answer (status 0: none).
func classify(status int, header http.Header, body []byte) ServerInfo {
	var ans struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	var d buildInfo
	var keys map[string]json.RawMessage
	ok := status == http.StatusOK && json.Unmarshal(body, &ans) == nil && ans.Status == "success" &&
		json.Unmarshal(ans.Data, &keys) == nil && keys != nil && json.Unmarshal(ans.Data, &d) == nil
	switch {
	case ok && d.GoVersion != "":
		// A real build info: by the body, even behind vmauth (whose answers
		// carry VictoriaMetrics's header whatever is behind it).
		if d.Application != "" {
			return ServerInfo{Name: ServerMimir, Version: d.Version}
		}
		switch major(d.Version) {
		case 0:
			return ServerInfo{Name: ServerThanos, Version: d.Version}
		case 1:
			return ServerInfo{Name: ServerCortex, Version: d.Version}
		case -1:
			return ServerInfo{Name: ServerUnknown, Version: d.Version}
		}
		return ServerInfo{Name: ServerPrometheus, Version: d.Version}
	case header.Get("X-Server-Hostname") != "":
		return ServerInfo{Name: ServerVictoriaMetrics}
	case ok && (len(keys) == 0 || len(keys) == 1 && d.Version == vmClaimedVersion):
		// VictoriaMetrics's stub without its header (-http.header.disableServerHostname).
		return ServerInfo{Name: ServerVictoriaMetrics}
	}
	return ServerInfo{Name: ServerUnknown}
}

// major is the major version of "2.53.1", "v0.37.2", "3.0.0-rc.0"; -1
// when it does not start with a number.
func major(v string) int {
	v = strings.TrimPrefix(v, "v")
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	n, err := strconv.Atoi(v[:end])
	if err != nil || (end < len(v) && v[end] != '.') {
		return -1
	}
	return n
}

// vmVersion reads VictoriaMetrics's version from vm_app_version on its
// /metrics: under --url's path (a single node, with or without
// -http.pathPrefix), then at the root (vmselect of a cluster, whose API is
// under /select/<tenant>/prometheus). "" when neither has it.
func (c *client) vmVersion(ctx context.Context) string {
	urls := []string{c.url(epMetrics, "").String()}
	if c.endpoint.Path != "" {
		root := *c.endpoint
		root.Path = epMetrics
		urls = append(urls, root.String())
	}
	for _, u := range urls {
		if v, ok := c.scanVMVersion(ctx, u); ok {
			return v
		}
	}
	return ""
}

var (
	vmShortVersion = regexp.MustCompile(`[{,\s]short_version="([^"]*)"`)
	vmFullVersion  = regexp.MustCompile(`[{,\s]version="([^"]*)"`)
)

// scanVMVersion reads /metrics line by line up to vm_app_version: its
// short_version (v1.79.5), else its version; ok when the line was there.
func (c *client) scanVMVersion(ctx context.Context, u string) (string, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", false
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", false
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxMetricsBytes))
	sc.Buffer(make([]byte, 0, 64<<10), maxMetricsLine)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("vm_app_version{")) {
			continue
		}
		for _, re := range []*regexp.Regexp{vmShortVersion, vmFullVersion} {
			if m := re.FindSubmatch(line); m != nil && len(m[1]) > 0 {
				return string(m[1]), true
			}
		}
		return "", true
	}
	return "", false
}
