package targets

// Readers of the emitted configurations: each reads back what a snippet
// set, by the target's own types where a Go parser exists and by its
// directives where none does, and says what a call through it does by the
// target's documented semantics (docs/method.md#9-config-targets; the sources are in
// each target's file): the longest the caller can wait, the attempts, and
// whether anything is retried after the request was sent. The property
// tests hold every target, for random histograms and flags, to the
// deadline and the idempotency rule; the simulator tests replay each
// target's semantics.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder Istio's own types use
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
	"google.golang.org/protobuf/encoding/protojson"
	networkingv1 "istio.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// behaviour is what one route of an emitted config does.
type behaviour struct {
	name string
	// worst is the longest a caller can wait, by the target's semantics.
	worst time.Duration
	// bound is the target's own bound over the whole call (Envoy's route
	// timeout, gRPC's timeout...); 0 when it has none.
	bound time.Duration
	// perTry bounds one attempt; 0 when the target has no such timer (gRPC).
	perTry   time.Duration
	attempts int
	// retrySent: something is retried after the request was sent (a
	// timeout, a reset, a status code, a hedge).
	retrySent bool
	// retryNeverSent: a failure before the request was sent is retried.
	retryNeverSent bool
	// statuses are the HTTP statuses retried, timeouts whether a per-try
	// timeout is.
	statuses []string
	timeouts bool
	// minUseful: the least time left for which the target still sends an
	// attempt (Envoy sends one however little is left).
	minUseful       time.Duration
	base, cap       time.Duration
	hedge           time.Duration // the hedge delay; 0: none
	hedgeAttempts   int
	connect, setup  time.Duration // the connect timer; all the timers before the request is sent
	staticAttempts  bool          // the attempts were fitted so that each may time out in full
	catchAll        bool
	retryExceptions []string
}

// readers read a target's snippet into behaviours, one per route.
var readers = map[string]func(body []byte) ([]behaviour, error){
	"envoy":        readEnvoy,
	"grpc":         readGRPC,
	"istio":        readIstio,
	"linkerd":      readLinkerd,
	"gateway-api":  readGateway,
	"resilience4j": readResilience4j,
	"go":           readGo,
	"httpx":        readHTTPX,
	"nginx":        readNginx,
	"haproxy":      readHAProxy,
}

// neverSentConds are the retry conditions of Envoy and Istio that a call
// that is not idempotent may have.
var neverSentConds = map[string]bool{"connect-failure": true, "refused-stream": true, "reset-before-request": true}

func readEnvoy(body []byte) ([]behaviour, error) {
	docs := yamlDocs(body)
	rj, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		return nil, err
	}
	var rc routev3.RouteConfiguration
	if err := protojson.Unmarshal(rj, &rc); err != nil {
		return nil, err
	}
	cj, err := yaml.YAMLToJSON(docs[1])
	if err != nil {
		return nil, err
	}
	var c clusterv3.Cluster
	if err := protojson.Unmarshal(cj, &c); err != nil {
		return nil, err
	}
	var out []behaviour
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			// The route timeout resets every attempt when it fires; 0 would
			// disable it (and Envoy's default is 15s, not "none").
			b := behaviour{name: r.GetName(), bound: ra.GetTimeout().AsDuration(), attempts: 1, connect: c.GetConnectTimeout().AsDuration()}
			b.worst = b.bound
			b.catchAll = r.GetMatch().GetPrefix() == "/" && r.GetMatch().GetHeaders() == nil
			if rp := ra.GetRetryPolicy(); rp != nil {
				b.attempts = 1 + int(rp.GetNumRetries().GetValue())
				b.perTry = rp.GetPerTryTimeout().AsDuration()
				b.base, b.cap = rp.GetRetryBackOff().GetBaseInterval().AsDuration(), rp.GetRetryBackOff().GetMaxInterval().AsDuration()
				for _, cond := range strings.Split(rp.GetRetryOn(), ",") {
					switch {
					case neverSentConds[cond]:
						b.retryNeverSent = true
					case cond == "reset":
						b.retrySent, b.timeouts, b.retryNeverSent = true, true, true
					default:
						b.retrySent = true
					}
				}
				for _, s := range rp.GetRetriableStatusCodes() {
					b.statuses = append(b.statuses, strconv.Itoa(int(s)))
				}
			}
			if hp := ra.GetHedgePolicy(); hp != nil && hp.GetHedgeOnPerTryTimeout() {
				b.hedge, b.hedgeAttempts, b.retrySent = b.perTry, b.attempts, true
				b.perTry = 0 // a per-try timeout sends a hedge rather than ending the attempt
			}
			if b.perTry == 0 && b.hedge == 0 {
				b.perTry = b.bound
			}
			out = append(out, b)
		}
	}
	return out, nil
}

func readIstio(body []byte) ([]behaviour, error) {
	docs := yamlDocs(body)
	o, err := decodeK8s(docs[0], "networking.istio.io/v1", "VirtualService")
	if err != nil {
		return nil, err
	}
	var vs networkingv1.VirtualService
	if err := (&jsonpb.Unmarshaler{}).Unmarshal(strings.NewReader(string(o.Spec)), &vs); err != nil {
		return nil, err
	}
	var out []behaviour
	for _, h := range vs.GetHttp() {
		b := behaviour{name: h.GetName(), bound: h.GetTimeout().AsDuration(), attempts: 1, catchAll: len(h.GetMatch()) == 0}
		b.worst, b.perTry = b.bound, b.bound
		rt := h.GetRetries()
		if rt == nil {
			// Istio's default: 2 retries on connect-failure, refused-stream,
			// unavailable, cancelled (pilot's route/retry/retry.go).
			b.attempts, b.retrySent, b.retryNeverSent = 3, true, true
		} else if rt.GetAttempts() > 0 {
			b.attempts = 1 + int(rt.GetAttempts())
			b.perTry = rt.GetPerTryTimeout().AsDuration()
			b.base = rt.GetBackoff().AsDuration()
			b.cap = 10 * b.base
			for _, cond := range strings.Split(rt.GetRetryOn(), ",") {
				switch {
				case neverSentConds[cond]:
					b.retryNeverSent = true
				case target.IsStatus(cond):
					b.retrySent = true
					b.statuses = append(b.statuses, cond)
				case cond == "reset":
					b.retrySent, b.timeouts, b.retryNeverSent = true, true, true
				default:
					b.retrySent = true
				}
			}
		}
		out = append(out, b)
	}
	return out, nil
}

func readGRPC(body []byte) ([]behaviour, error) {
	var cfg grpc.Config
	if err := json.Unmarshal(body, &cfg); err != nil {
		return nil, err
	}
	var out []behaviour
	for _, mc := range cfg.MethodConfig {
		t, err := time.ParseDuration(mc.Timeout)
		if err != nil {
			return nil, err
		}
		// The timeout is the call's deadline over every attempt; there is
		// no per-try timeout, and transparent retries cover never-sent RPCs.
		b := behaviour{name: mc.Name[0].Service + "/" + mc.Name[0].Method, bound: t, worst: t, attempts: 1, retryNeverSent: true, catchAll: mc.Name[0].Method == ""}
		if rp := mc.RetryPolicy; rp != nil {
			b.attempts, b.retrySent = rp.MaxAttempts, true
			b.base, _ = time.ParseDuration(rp.InitialBackoff)
			b.cap, _ = time.ParseDuration(rp.MaxBackoff)
		}
		if hp := mc.HedgingPolicy; hp != nil {
			b.retrySent = true
			b.hedgeAttempts = hp.MaxAttempts
			b.hedge, _ = time.ParseDuration(hp.HedgingDelay)
		}
		out = append(out, b)
	}
	return out, nil
}

func readLinkerd(body []byte) ([]behaviour, error) {
	var out []behaviour
	for _, doc := range yamlDocs(body) {
		var head struct {
			Kind     string
			Metadata struct {
				Name        string
				Annotations map[string]string
			}
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, err
		}
		if head.Kind == "ServiceProfile" {
			var sp lkServiceProfile
			if err := yaml.Unmarshal(doc, &sp); err != nil {
				return nil, err
			}
			for _, r := range sp.Spec.Routes {
				t, _ := time.ParseDuration(r.Timeout)
				// A retryable route is retried on 5xx while the budget lasts;
				// its timeout covers the retries.
				out = append(out, behaviour{name: *r.Name, bound: t, worst: t, perTry: t, attempts: 1, retrySent: r.IsRetryable, catchAll: r.Condition.PathRegex == "/.*"})
			}
			continue
		}
		a := head.Metadata.Annotations
		t, _ := time.ParseDuration(a["timeout.linkerd.io/request"])
		b := behaviour{name: head.Metadata.Name, bound: t, worst: t, perTry: t, attempts: 1, catchAll: strings.HasSuffix(head.Metadata.Name, "-all")}
		if l, ok := a["retry.linkerd.io/limit"]; ok {
			n, _ := strconv.Atoi(l)
			b.attempts, b.retrySent = n+1, true
			b.base, b.cap = 25*time.Millisecond, 250*time.Millisecond // fixed in Linkerd
			if pt, ok := a["retry.linkerd.io/timeout"]; ok {
				b.perTry, _ = time.ParseDuration(pt)
				b.timeouts = true
			}
			if s := a["retry.linkerd.io/http"]; s != "" {
				b.statuses = strings.Split(s, ",")
			}
		}
		out = append(out, b)
	}
	return out, nil
}

func readGateway(body []byte) ([]behaviour, error) {
	var out []behaviour
	for _, doc := range yamlDocs(body) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		var hr gatewayv1.HTTPRoute
		if err := json.Unmarshal(j, &hr); err != nil {
			return nil, err
		}
		for _, r := range hr.Spec.Rules {
			req, _ := time.ParseDuration(string(*r.Timeouts.Request))
			back, _ := time.ParseDuration(string(*r.Timeouts.BackendRequest))
			b := behaviour{name: string(*r.Name), bound: req, worst: req, perTry: back, attempts: 1}
			b.catchAll = len(r.Matches) == 1 && r.Matches[0].Path != nil && *r.Matches[0].Path.Value == "/" && r.Matches[0].Method == nil
			if rt := r.Retry; rt != nil && *rt.Attempts > 0 {
				// GEP-1731: attempts counts the retries (0 disables them,
				// v1.7.0); an attempt that reaches backendRequest is
				// retried; the whole stays within request.
				b.attempts, b.retrySent, b.timeouts = 1+*rt.Attempts, true, true
				b.base, _ = time.ParseDuration(string(*rt.Backoff))
				for _, c := range rt.Codes {
					b.statuses = append(b.statuses, strconv.Itoa(int(c)))
				}
			}
			out = append(out, b)
		}
	}
	return out, nil
}

func readResilience4j(body []byte) ([]behaviour, error) {
	var c r4jConfig
	if err := yaml.Unmarshal(body, &c); err != nil {
		return nil, err
	}
	r := c.Resilience4j
	var out []behaviour
	for _, n := range target.SortedKeys(r.Timelimiter.Instances) {
		t, err := time.ParseDuration(r.Timelimiter.Instances[n].TimeoutDuration)
		if err != nil {
			return nil, err
		}
		// Retry(TimeLimiter(call)): nothing bounds the whole call; each
		// attempt is bounded by the time limit, and the wait before retry i
		// is min(randomized(base x 2^i), max).
		b := behaviour{name: n, perTry: t, attempts: 1, staticAttempts: true}
		b.worst = t
		if r.Retry != nil {
			if rt, ok := r.Retry.Instances[n]; ok {
				b.attempts = rt.MaxAttempts
				b.base, _ = time.ParseDuration(rt.WaitDuration)
				b.cap, _ = time.ParseDuration(rt.ExponentialMaxWaitDuration)
				b.retryExceptions = rt.RetryExceptions
				for _, e := range rt.RetryExceptions {
					if !contains(resilience4j.NeverSent, e) {
						b.retrySent = true
					}
				}
				b.retryNeverSent = true
				w := b.base
				for range b.attempts - 1 {
					b.worst += t + min(time.Duration(float64(w)*(1+rt.RandomizedWaitFactor)), b.cap)
					w = time.Duration(float64(w) * rt.ExponentialBackoffMultiplier)
				}
			}
		}
		out = append(out, b)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var (
	goPolicy  = regexp.MustCompile(`(?s)var (\w+) = Policy\{(.*?)\n\}`)
	goField   = regexp.MustCompile(`(\w+):\s+([^,\n]+),`)
	goDurExpr = regexp.MustCompile(`^(\d+) \* time\.(Millisecond|Second)$`)
	goConnect = regexp.MustCompile(`var dialer = &net.Dialer\{Timeout: ([^,]+),`)
)

func goDuration(expr string) time.Duration {
	if expr == "time.Second" {
		return time.Second
	}
	m := goDurExpr.FindStringSubmatch(expr)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	if m[2] == "Second" {
		return time.Duration(n) * time.Second
	}
	return time.Duration(n) * time.Millisecond
}

func readGo(body []byte) ([]behaviour, error) {
	var out []behaviour
	connect := time.Duration(-1)
	if m := goConnect.FindSubmatch(body); m != nil {
		connect = goDuration(string(m[1]))
	}
	for _, m := range goPolicy.FindAllSubmatch(body, -1) {
		f := map[string]string{}
		for _, kv := range goField.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = strings.TrimSpace(string(kv[2]))
		}
		// Do: a context of Timeout over the call, of PerTry per attempt;
		// never-sent requests are retried, sent ones only with RetrySent.
		b := behaviour{name: string(m[1]), bound: goDuration(f["Timeout"]), perTry: goDuration(f["PerTry"]), connect: connect}
		b.worst = b.bound
		b.attempts, _ = strconv.Atoi(f["Attempts"])
		b.retryNeverSent = b.attempts > 1
		b.retrySent = f["RetrySent"] == "true"
		b.timeouts = b.retrySent
		if f["Base"] != "" {
			b.base, b.cap, b.minUseful = goDuration(f["Base"]), goDuration(f["Cap"]), goDuration(f["MinUseful"])
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Policy in the Go snippet")
	}
	return out, nil
}

var (
	pyGroup   = regexp.MustCompile(`(?s)\n    ("(?:\\.|[^"\\])*"): \{\n(.*?)\n    \},`)
	pyTimeout = regexp.MustCompile(`httpx\.Timeout\(connect=([0-9.]+), read=([0-9.]+), write=([0-9.]+), pool=([0-9.]+)\)`)
	pyField   = regexp.MustCompile(`"(\w+)": ([^,\n]+),`)
)

func pyDuration(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return time.Duration(f*1000+0.5) * time.Millisecond
}

func readHTTPX(body []byte) ([]behaviour, error) {
	var out []behaviour
	for _, m := range pyGroup.FindAllSubmatch(body, -1) {
		t := pyTimeout.FindSubmatch(m[2])
		if t == nil {
			return nil, fmt.Errorf("group %s: no httpx.Timeout", m[1])
		}
		f := map[string]string{}
		for _, kv := range pyField.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = string(kv[2])
		}
		connect, read, write, pool := pyDuration(string(t[1])), pyDuration(string(t[2])), pyDuration(string(t[3])), pyDuration(string(t[4]))
		one := pool + connect + write + read
		b := behaviour{name: string(m[1]), perTry: read, connect: connect, setup: pool + connect + write}
		b.attempts, _ = strconv.Atoi(f["attempts"])
		b.retryNeverSent = b.attempts > 1
		b.retrySent = f["retry_sent"] == "True"
		b.timeouts = b.retrySent
		b.base, b.cap = pyDuration(f["backoff_base"]), pyDuration(f["backoff_cap"])
		// send(): the first attempt always goes; another only while a whole
		// attempt fits in what is left of the deadline.
		if dl := f["deadline"]; dl != "None" {
			b.bound = pyDuration(dl)
			b.worst = max(b.bound, one)
			b.minUseful = one
		} else {
			b.worst = time.Duration(b.attempts)*one + time.Duration(b.attempts-1)*b.cap
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no group in the httpx snippet")
	}
	return out, nil
}

var (
	ngxLocation  = regexp.MustCompile(`(?s)\n    location ([^{]+?) \{\n(.*?)\n    \}`)
	ngxDirective = regexp.MustCompile(`(?m)^\s+(\w+) ([^;]+);`)
	ngxServer    = regexp.MustCompile(`(?m)^    server \S+`)
)

func ngxDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return d
}

func readNginx(body []byte) ([]behaviour, error) {
	entries := len(ngxServer.FindAll(body, -1))
	var out []behaviour
	for _, m := range ngxLocation.FindAllSubmatch(body, -1) {
		f := map[string]string{}
		for _, kv := range ngxDirective.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = string(kv[2])
		}
		c, r := ngxDuration(f["proxy_connect_timeout"]), ngxDuration(f["proxy_read_timeout"])
		one := c + r
		b := behaviour{name: string(m[1]), perTry: r, connect: c, setup: c, attempts: 1, catchAll: string(m[1]) == "/"}
		if next := f["proxy_next_upstream"]; next != "" && next != "off" {
			tries, _ := strconv.Atoi(f["proxy_next_upstream_tries"])
			// A request tries each server entry at most once.
			b.attempts = min(tries, entries)
			b.retryNeverSent = true
			for _, c := range strings.Fields(next) {
				switch {
				case c == "non_idempotent":
					b.retrySent = true
				case c == "timeout":
					b.timeouts = true
				case strings.HasPrefix(c, "http_"):
					b.statuses = append(b.statuses, strings.TrimPrefix(c, "http_"))
				}
			}
		}
		// No try begins after proxy_next_upstream_timeout (0: none), and a
		// try takes at most a connect and a read.
		b.worst = time.Duration(b.attempts) * one
		if u := ngxDuration(f["proxy_next_upstream_timeout"]); u > 0 && b.attempts > 1 {
			b.worst = min(b.worst, u+one)
			b.bound, b.minUseful = u+one, one
		}
		out = append(out, b)
	}
	return out, nil
}

var (
	hapBackend   = regexp.MustCompile(`(?s)(?:^|\n)backend (\S+)\n(.*?)(?:\n\n|\n#|$)`)
	hapDirective = regexp.MustCompile(`(?m)^    (timeout queue|timeout connect|timeout server|retries|retry-on|option redispatch) ?(.*)$`)
)

func readHAProxy(body []byte) ([]behaviour, error) {
	var out []behaviour
	for _, m := range hapBackend.FindAllSubmatch(body, -1) {
		f := map[string]string{}
		for _, kv := range hapDirective.FindAllSubmatch(m[2], -1) {
			f[string(kv[1])] = strings.TrimSpace(string(kv[2]))
		}
		q, c, s := ngxDuration(f["timeout queue"]), ngxDuration(f["timeout connect"]), ngxDuration(f["timeout server"])
		retries := 3 // HAProxy's default
		if r, ok := f["retries"]; ok {
			retries, _ = strconv.Atoi(r)
		}
		conds := []string{"conn-failure"} // the default of retry-on
		if on, ok := f["retry-on"]; ok {
			conds = strings.Fields(on)
		}
		b := behaviour{name: string(m[1]), perTry: s, connect: c, setup: q + c, attempts: retries + 1, staticAttempts: true, catchAll: strings.HasSuffix(string(m[1]), "_catch_all")}
		l7 := false
		for _, cond := range conds {
			switch {
			case cond == "conn-failure":
				b.retryNeverSent = retries > 0
			case cond == "response-timeout":
				l7, b.timeouts = true, true
			case target.IsStatus(cond):
				l7 = true
				b.statuses = append(b.statuses, cond)
			default:
				l7 = true
			}
		}
		b.retrySent = l7 && retries > 0
		// The worst case with a silent server (configuration.txt 2.6 and
		// back_handle_st_cer): the queue once, and once more on a
		// redispatch; a connection failure costs at most timeout connect
		// (a refused one waits min(connect, 1s) before the next try); a
		// layer-7 retry costs a whole connect and server timeout.
		switch {
		case retries == 0:
			b.worst = q + c + s
		case l7:
			b.worst = 2*q + time.Duration(retries+1)*(c+s)
		default:
			b.worst = 2*q + time.Duration(retries)*c + c + s
		}
		out = append(out, b)
	}
	return out, nil
}
