package e2e

// The HTML report in a real browser: headless Chromium (Debian's chromium)
// loads a report from a file and the test checks that it renders.
//
// How: the test drives Chromium over the DevTools protocol, with the
// small WebSocket client below (the standard library has none). One
// browser and one page load give everything exactly, with no script in the
// report: Runtime.exceptionThrown, Runtime.consoleAPICalled and
// Log.entryAdded report errors (a Content-Security-Policy violation is a
// Log entry), Network.requestWillBeSent lists every URL the page asks for
// (only the report itself may be loaded: it must open offline),
// Runtime.evaluate measures each SVG's box in the laid-out page, and
// Page.captureScreenshot writes the screenshot. The alternatives were
// weaker: --dump-dom cannot measure a box without a script of ours in the
// report, and console messages grepped from --enable-logging=stderr carry
// no level and depend on Chromium's log format.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTMLReportInChromium renders the README's worked example, and a
// report per route with a call policy and snippets, in headless Chromium.
// TUNETIMEOUT_SCREENSHOT=docs/report.png also copies the worked example's
// screenshot there (relative to the repository), for the README.
func TestHTMLReportInChromium(t *testing.T) {
	chromium := requireBinary(t, "chromium", "chromium")
	dir := t.TempDir()
	bin := filepath.Join(dir, "tunetimeout")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tunetimeout")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	profile := filepath.Join(dir, "profile.csv")
	require.NoError(t, os.WriteFile(profile, threeDays(), 0o644))
	spans := filepath.Join(dir, "spans.json")
	require.NoError(t, os.WriteFile(spans, zipkinChain(), 0o644))
	reports := []struct {
		name   string
		args   []string
		groups int
		graph  bool // a call graph: one SVG more
		herd   bool // the herd's plot: one SVG more
		// windows: a plot of the windows per group, one point each (9
		// minutes of testdata/mixture.csv)
		windows int
		// profile: a heat map per group, one cell per hour and day
		profile int
		// boundary: the stability boundary's grid per group, one cell per
		// trigger size and length swept (simulate.SweepFactors x
		// SweepDurations: 4 x 7)
		boundary int
	}{
		{"worked example", []string{"analyze", "testdata/mixture.csv", "--rate", "400", "--pool", "200"}, 1, false, false, 0, 0, 0},
		{"by route with a policy", []string{"analyze", "testdata/mixture.csv", "--by", "route", "--pool", "200", "--rtt", "2ms",
			"--deadline", "3s", "--attempts", "3", "--retry-budget", "10%", "--idempotent", "--emit", "envoy,grpc"}, 3, false, false, 0, 0, 0},
		{"spans with a call graph", []string{"analyze", spans, "--deadline", "1s"}, 3, true, false, 0, 0, 0},
		{"the herd", []string{"analyze", "testdata/mixture.csv", "--herd", "1000", "--capacity", "5000", "--attempts", "8",
			"--backoff-base", "10ms", "--backoff-cap", "2s"}, 1, false, true, 0, 0, 0},
		{"windows", []string{"analyze", "testdata/mixture.csv", "--by", "route", "--window", "1m"}, 3, false, false, 9, 0, 0},
		{"daily profile", []string{"analyze", profile, "--window", "1h"}, 1, false, false, 3 * 24, 3 * 24, 0},
		{"stability boundary", []string{"analyze", "testdata/mixture.csv", "--rate", "400", "--capacity", "444", "--deadline", "1s",
			"--idempotent", "--attempts", "3", "--trigger", "slow:3x:60s"}, 1, false, false, 0, 0, 4 * 7},
	}
	b := startChromium(t, chromium, dir)
	for i, rep := range reports {
		t.Run(rep.name, func(t *testing.T) {
			file := filepath.Join(dir, fmt.Sprintf("report-%d.html", i))
			cmd := exec.Command(bin, append(rep.args, "-o", "html", "--output", file)...)
			cmd.Dir = ".." // the README's command line, file names included
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			fi, err := os.Stat(file)
			require.NoError(t, err)
			t.Logf("%s: %d bytes of HTML", rep.name, fi.Size())

			page := b.open(t)
			fileURL := (&url.URL{Scheme: "file", Path: file}).String()
			page.load(t, fileURL)

			// Every SVG is there and laid out with a size.
			var svgs []struct {
				ID       string  `json:"id"`
				Width    float64 `json:"width"`
				Height   float64 `json:"height"`
				Elements int     `json:"elements"`
			}
			page.evaluate(t, `JSON.stringify([...document.querySelectorAll("svg")].map(s => {
				const r = s.getBoundingClientRect();
				return {id: s.id, width: r.width, height: r.height, elements: s.querySelectorAll("*").length};
			}))`, &svgs)
			want := 3 * rep.groups
			if rep.graph {
				want++
			}
			if rep.herd {
				want++
			}
			if rep.windows > 0 {
				want += rep.groups
			}
			if rep.profile > 0 {
				want += rep.groups
			}
			if rep.boundary > 0 {
				want += rep.groups
			}
			require.Len(t, svgs, want, "a percentile plot, a histogram and a Little's law bar per group, and the call graph")
			for _, s := range svgs {
				if s.ID == "call-graph-plot" {
					// The graph: four services, three calls, their labels.
					var graph struct{ Nodes, Edges, Labels int }
					page.evaluate(t, `JSON.stringify((() => { const g = document.getElementById("call-graph-plot");
						return {nodes: g.querySelectorAll("rect").length, edges: g.querySelectorAll("line, path").length,
							labels: [...g.querySelectorAll("text")].filter(e => e.getBBox().width > 0).length}; })())`, &graph)
					assert.GreaterOrEqual(t, graph.Nodes, 4, "a box per service")
					assert.GreaterOrEqual(t, graph.Edges, 3, "an arrow per call")
					assert.GreaterOrEqual(t, graph.Labels, 4+3, "names and edge labels are laid out")
					assert.Greater(t, s.Width, 300.0, "the graph is laid out with a width")
					continue
				}
				if strings.HasSuffix(s.ID, "-windows") {
					// One point per window and percentile, the lines drawn,
					// the timeout across.
					var win struct {
						Points, Lines, Timeout int
						Length                 float64
					}
					page.evaluate(t, `JSON.stringify((() => { const g = document.getElementById("`+s.ID+`");
						return {points: g.querySelectorAll("circle.window-point.p999").length, lines: g.querySelectorAll("path.window-line").length,
							timeout: g.querySelectorAll("line.timeout").length,
							length: g.querySelector("path.window-line.p999").getTotalLength()}; })())`, &win)
					assert.Equal(t, rep.windows, win.Points, "%s: one point per window", s.ID)
					assert.Equal(t, 3, win.Lines, s.ID)
					assert.Equal(t, 1, win.Timeout, s.ID)
					assert.Greater(t, win.Length, 300.0, "%s: drawn across the plot", s.ID)
					assert.Greater(t, s.Width, 300.0)
					continue
				}
				if strings.HasSuffix(s.ID, "-profile") {
					// The heat map: one cell per hour and day, the worst
					// slot's cells outlined, the timeout on the scale.
					var heat struct {
						Cells, Worst, Timeout int
						CellWidth             float64
					}
					page.evaluate(t, `JSON.stringify((() => { const g = document.getElementById("`+s.ID+`");
						const c = g.querySelectorAll("rect.profile-cell");
						return {cells: c.length, worst: g.querySelectorAll("rect.worst-slot").length,
							timeout: g.querySelectorAll("line.timeout").length, cellWidth: c[0].getBoundingClientRect().width}; })())`, &heat)
					assert.Equal(t, rep.profile, heat.Cells, "%s: one cell per hour and day", s.ID)
					assert.Equal(t, 3, heat.Worst, "%s: the 18:00 slot on each of the 3 days", s.ID)
					assert.Equal(t, 1, heat.Timeout, s.ID)
					assert.Greater(t, heat.CellWidth, 10.0, "%s: cells are laid out", s.ID)
					continue
				}
				if strings.HasSuffix(s.ID, "-boundary") {
					// The stability boundary: one cell per trigger size
					// and length, each with its symbol laid out, the own
					// trigger (3x for 1m) outlined, the boundary drawn.
					var grid struct {
						Cells, Marks, Own int
						Line, CellWidth   float64
					}
					page.evaluate(t, `JSON.stringify((() => { const g = document.getElementById("`+s.ID+`");
						const c = g.querySelectorAll("rect.boundary-cell");
						return {cells: c.length, marks: [...g.querySelectorAll("text.cell-mark")].filter(e => e.getBBox().width > 0).length,
							own: g.querySelectorAll("rect.own-trigger").length, line: g.querySelector("path.boundary-line").getTotalLength(),
							cellWidth: c[0].getBoundingClientRect().width}; })())`, &grid)
					assert.Equal(t, rep.boundary, grid.Cells, "%s: one cell per trigger size and length", s.ID)
					assert.Equal(t, rep.boundary, grid.Marks, "%s: each cell's symbol is laid out", s.ID)
					assert.Equal(t, 1, grid.Own, "%s: the own trigger is a cell of the sweep", s.ID)
					assert.Greater(t, grid.Line, 4*32.0, "%s: the boundary runs down every row", s.ID)
					assert.Greater(t, grid.CellWidth, 30.0, "%s: cells are laid out", s.ID)
					continue
				}
				if s.ID == "herd-calls" {
					// The herd: the policy's line and no jitter's, drawn
					// across the plot, and the capacity line.
					var herd struct {
						Lengths  []float64 `json:"lengths"`
						Capacity int       `json:"capacity"`
					}
					page.evaluate(t, `JSON.stringify((() => { const g = document.getElementById("herd-calls");
						return {lengths: [...g.querySelectorAll("path.series")].map(p => p.getTotalLength()),
							capacity: g.querySelectorAll("line.capacity-line").length}; })())`, &herd)
					require.Len(t, herd.Lengths, 2, "your policy and no jitter")
					for _, l := range herd.Lengths {
						assert.Greater(t, l, 200.0, "each line is drawn, up and down the plot")
					}
					assert.Equal(t, 1, herd.Capacity)
					assert.Greater(t, s.Width, 300.0)
					continue
				}
				assert.Regexp(t, `^g\d+-(percentiles|histogram|littles-law)$`, s.ID)
				assert.Greater(t, s.Width, 300.0, "%s is laid out with a width", s.ID)
				assert.Greater(t, s.Height, 100.0, "%s is laid out with a height", s.ID)
				assert.Greater(t, s.Elements, 10, "%s has its elements", s.ID)
			}
			var curve struct {
				Length float64 `json:"length"`
			}
			page.evaluate(t, `JSON.stringify({length: document.querySelector("svg path.curve").getTotalLength()})`, &curve)
			assert.Greater(t, curve.Length, 300.0, "the percentile curve is drawn")
			var snippets int
			page.evaluate(t, `String(document.querySelectorAll("#snippets pre").length)`, &snippets)
			if strings.Contains(strings.Join(rep.args, " "), "--emit") {
				assert.Equal(t, 2, snippets, "the --emit snippets are in the page")
			}

			shot := page.screenshot(t, filepath.Join(dir, fmt.Sprintf("shot-%d.png", i)))
			if target := os.Getenv("TUNETIMEOUT_SCREENSHOT"); target != "" && i == 0 {
				if !filepath.IsAbs(target) {
					target = filepath.Join("..", target)
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
				require.NoError(t, os.WriteFile(target, shot, 0o644))
				t.Logf("screenshot copied to %s", target)
			}

			page.close(t)
			assert.Empty(t, page.errors(), "no console errors, exceptions or policy violations")
			assert.Equal(t, []string{fileURL}, page.requests(), "the report loads nothing but itself")
		})
	}
}

// zipkinChain is a Zipkin v2 span list of 3,000 calls: frontend calls
// checkout, which calls payments, and frontend calls cart, each call a
// CLIENT span under the caller's SERVER span.
func zipkinChain() []byte {
	var spans []string
	id := 0
	span := func(trace, parent int, kind, svc, remote string, start, dur int64) int {
		id++
		p := ""
		if parent > 0 {
			p = fmt.Sprintf(`"parentId":"%016x",`, parent)
		}
		r := ""
		if remote != "" {
			r = fmt.Sprintf(`,"remoteEndpoint":{"serviceName":%q}`, remote)
		}
		spans = append(spans, fmt.Sprintf(`{"traceId":"%032x","id":"%016x",%s"kind":%q,"name":"get","timestamp":%d,"duration":%d,"localEndpoint":{"serviceName":%q}%s}`,
			trace, id, p, kind, start, dur, svc, r))
		return id
	}
	base := int64(1_793_613_600_000_000)
	for i := range 1000 {
		t0 := base + int64(i)*10_000
		d := int64(2000 + (i*7919)%40_000)
		c := span(i+1, 0, "CLIENT", "frontend", "checkout", t0, d+3000)
		s := span(i+1, c, "SERVER", "checkout", "", t0+500, d+2000)
		span(i+1, s, "CLIENT", "checkout", "payments", t0+600, d)
		span(i+1, 0, "CLIENT", "frontend", "cart", t0, 1000+(int64(i)*31)%9000)
	}
	return []byte("[" + strings.Join(spans, ",\n") + "]\n")
}

// browser is a running headless Chromium.
type browser struct {
	port string
}

// startChromium starts headless Chromium with a DevTools port; it is
// stopped, its whole process group, when the test ends.
func startChromium(t *testing.T, bin, dir string) *browser {
	t.Helper()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
		"--user-data-dir="+filepath.Join(dir, "chromium-profile"), "--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0", "--window-size=1280,2400", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	// "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/..."
	found := make(chan string, 1)
	var log bytes.Buffer
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := regexp.MustCompile(`DevTools listening on ws://127\.0\.0\.1:(\d+)/`).FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case port := <-found:
		return &browser{port: port}
	case <-time.After(60 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("chromium did not open its DevTools port within a minute:\n%s", log.String())
	}
	return nil
}

// open creates a new page (a target) and connects to it.
func (b *browser) open(t *testing.T) *page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://127.0.0.1:"+b.port+"/json/new?about:blank", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var target struct {
		ID    string `json:"id"`
		WSURL string `json:"webSocketDebuggerUrl"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&target))
	require.NotEmpty(t, target.WSURL)
	ws, err := dialWebSocket(target.WSURL)
	require.NoError(t, err)
	p := &page{ws: ws, port: b.port, target: target.ID, pending: map[int]chan cdpMessage{}, loaded: make(chan struct{}, 1)}
	go p.readLoop()
	for _, domain := range []string{"Page", "Runtime", "Log", "Network"} {
		p.call(t, domain+".enable", nil, nil)
	}
	p.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 2400, "deviceScaleFactor": 1, "mobile": false}, nil)
	return p
}

// page is one browser tab driven over the DevTools protocol.
type page struct {
	ws     *webSocket
	port   string
	target string

	mu       sync.Mutex
	nextID   int
	pending  map[int]chan cdpMessage
	problems []string
	urls     []string
	loaded   chan struct{}
	readErr  error
}

type cdpMessage struct {
	ID     int             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (p *page) readLoop() {
	for {
		data, err := p.ws.read()
		if err != nil {
			p.mu.Lock()
			p.readErr = err
			for _, ch := range p.pending {
				close(ch)
			}
			p.pending = map[int]chan cdpMessage{}
			p.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		p.mu.Lock()
		if m.ID != 0 {
			if ch, ok := p.pending[m.ID]; ok {
				ch <- m
				delete(p.pending, m.ID)
			}
		} else {
			p.event(m)
		}
		p.mu.Unlock()
	}
}

// event records what the checks need; p.mu is held.
func (p *page) event(m cdpMessage) {
	switch m.Method {
	case "Page.loadEventFired":
		select {
		case p.loaded <- struct{}{}:
		default:
		}
	case "Network.requestWillBeSent":
		var e struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(m.Params, &e) == nil {
			p.urls = append(p.urls, e.Request.URL)
		}
	case "Runtime.exceptionThrown":
		p.problems = append(p.problems, "exception: "+string(m.Params))
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Params, &e) == nil && (e.Type == "error" || e.Type == "warning" || e.Type == "assert") {
			p.problems = append(p.problems, "console."+e.Type+": "+string(m.Params))
		}
	case "Log.entryAdded":
		var e struct {
			Entry struct {
				Level, Source, Text, URL string
			} `json:"entry"`
		}
		if json.Unmarshal(m.Params, &e) == nil && (e.Entry.Level == "error" || e.Entry.Level == "warning") {
			p.problems = append(p.problems, fmt.Sprintf("log %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// call sends one command and decodes its result into result (may be nil).
func (p *page) call(t *testing.T, method string, params any, result any) {
	t.Helper()
	p.mu.Lock()
	if p.readErr != nil {
		p.mu.Unlock()
		t.Fatalf("%s: the DevTools connection is gone: %v", method, p.readErr)
	}
	p.nextID++
	id := p.nextID
	ch := make(chan cdpMessage, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	data, err := json.Marshal(msg)
	require.NoError(t, err)
	require.NoError(t, p.ws.write(data), method)
	select {
	case m, ok := <-ch:
		require.True(t, ok, "%s: the DevTools connection closed", method)
		if m.Error != nil {
			t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			require.NoError(t, json.Unmarshal(m.Result, result), method)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer within 30s", method)
	}
}

// load navigates to u and waits for the load event.
func (p *page) load(t *testing.T, u string) {
	t.Helper()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	p.call(t, "Page.navigate", map[string]any{"url": u}, &nav)
	require.Empty(t, nav.ErrorText, "navigating to %s", u)
	select {
	case <-p.loaded:
	case <-time.After(30 * time.Second):
		t.Fatal("the page did not finish loading within 30s")
	}
}

// evaluate runs a JavaScript expression that returns a string (JSON) and
// decodes it into v.
func (p *page) evaluate(t *testing.T, expr string, v any) {
	t.Helper()
	var res struct {
		Result struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	p.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	require.Empty(t, res.ExceptionDetails, "evaluating %s", expr)
	require.Equal(t, "string", res.Result.Type, expr)
	require.NoError(t, json.Unmarshal([]byte(res.Result.Value), v), res.Result.Value)
}

// screenshot captures the viewport (1280x2400) as PNG into path, checks
// that it shows something, and returns it.
func (p *page) screenshot(t *testing.T, path string) []byte {
	t.Helper()
	var res struct {
		Data string `json:"data"`
	}
	p.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}, &res)
	shot, err := base64.StdEncoding.DecodeString(res.Data)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 1280, 2400), img.Bounds())
	colours := map[[3]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	assert.Greater(t, len(colours), 20, "the screenshot is not blank")
	return shot
}

// close closes the page's target.
func (p *page) close(t *testing.T) {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + p.port + "/json/close/" + p.target)
	if err == nil {
		resp.Body.Close()
	}
	p.ws.conn.Close()
}

func (p *page) errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

func (p *page) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.urls...)
}

// webSocket is the client side of RFC 6455, as much as the DevTools
// protocol needs: text messages, fragmented or not, pings answered.
type webSocket struct {
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex
}

func dialWebSocket(rawURL string) (*webSocket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	keyBytes := make([]byte, 16)
	_, _ = rand.Read(keyBytes)
	key := base64.StdEncoding.EncodeToString(keyBytes)
	req := &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Header: http.Header{
		"Upgrade":               {"websocket"},
		"Connection":            {"Upgrade"},
		"Sec-WebSocket-Key":     {key},
		"Sec-WebSocket-Version": {"13"},
	}}
	u.Scheme = "http"
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	resp.Body.Close()
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake with %s: %s", rawURL, resp.Status)
	}
	return &webSocket{conn: conn, br: br}, nil
}

// write sends one text message in one masked frame.
func (w *webSocket) write(payload []byte) error {
	return w.frame(0x1, payload)
}

func (w *webSocket) frame(opcode byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	hdr := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	masked := make([]byte, len(payload))
	for i, c := range payload {
		masked[i] = c ^ mask[i%4]
	}
	_, err := w.conn.Write(append(hdr, masked...))
	return err
}

// read returns the next text or binary message.
func (w *webSocket) read() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		fin, opcode := h[0]&0x80 != 0, h[0]&0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		var mask []byte
		if h[1]&0x80 != 0 {
			mask = make([]byte, 4)
			if _, err := io.ReadFull(w.br, mask); err != nil {
				return nil, err
			}
		}
		if n > 1<<30 {
			return nil, fmt.Errorf("websocket frame of %d bytes", n)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(w.br, payload); err != nil {
			return nil, err
		}
		if mask != nil {
			for i := range payload {
				payload[i] ^= mask[i%4]
			}
		}
		switch opcode {
		case 0x8: // close
			return nil, errors.New("websocket closed by the server")
		case 0x9: // ping
			if err := w.frame(0xA, payload); err != nil {
				return nil, err
			}
			continue
		case 0xA: // pong
			continue
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// threeDays is a CSV of three days, 1,500 calls an hour (lognormal: p99
// 0.5 s, p99.9 0.8 s), whose 18:00 hours hold 3,000 calls twice as slow:
// a daily profile names 18:00 (issue 31's week, cut to three days).
func threeDays() []byte {
	var b bytes.Buffer
	b.WriteString("timestamp,latency_ms\n")
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	x := uint64(1)
	uniform := func() float64 { // in (0, 1)
		x = x*6364136223846793005 + 1442695040888963407
		return (float64(x>>11) + 0.5) / (1 << 53)
	}
	for h := range 3 * 24 {
		hour := start.Add(time.Duration(h) * time.Hour)
		n, slow := 1500, 1.0
		if hour.Hour() == 18 {
			n, slow = 3000, 2.0
		}
		for i := range n {
			z := math.Sqrt(-2*math.Log(uniform())) * math.Cos(2*math.Pi*uniform()) // Box-Muller
			fmt.Fprintf(&b, "%d,%.3f\n", hour.Add(time.Duration(i)*time.Hour/time.Duration(n)).Unix(), 120*slow*math.Exp(0.615*z))
		}
	}
	return b.Bytes()
}
