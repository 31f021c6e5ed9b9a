// Package targets is the one ordered list of the config targets: the
// order of --help, docs/cli and --emit all is the order of All. A target
// lives in a package of its own under target/ and is one line here; the
// jobs find a target by name, or loop over All, through this package.
package targets

import (
	"fmt"
	"strings"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/gatewayapi"
	"github.com/tunetimeout/tunetimeout/target/gonethttp"
	"github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/haproxy"
	"github.com/tunetimeout/tunetimeout/target/httpx"
	"github.com/tunetimeout/tunetimeout/target/istio"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
	"github.com/tunetimeout/tunetimeout/target/nginx"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
)

// All is every target, in the order --help, docs/cli and --emit all list
// them. Adding a target is one package (target/NAME) and one line here.
var All = []target.Target{
	envoy.Target,
	grpc.Target,
	istio.Target,
	linkerd.Target,
	gatewayapi.Target,
	resilience4j.Target,
	gonethttp.Target,
	httpx.Target,
	nginx.Target,
	haproxy.Target,
}

// Names returns the target names in registry order.
func Names() []string {
	names := make([]string, len(All))
	for i, t := range All {
		names[i] = t.Name
	}
	return names
}

// Lookup returns the target of a name.
func Lookup(name string) (target.Target, error) {
	for _, t := range All {
		if t.Name == name {
			return t, nil
		}
	}
	return target.Target{}, fmt.Errorf("unknown snippet target %q (known: %s, or all)", name, strings.Join(Names(), ", "))
}

// ParseList resolves a comma-separated list of target names ("all" for
// every target) in registry order, without duplicates.
func ParseList(list string) ([]target.Target, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "":
			continue
		case "all":
			for _, t := range All {
				want[t.Name] = true
			}
			continue
		}
		if _, err := Lookup(n); err != nil {
			return nil, err
		}
		want[n] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no snippet target given (known: %s, or all)", strings.Join(Names(), ", "))
	}
	var out []target.Target
	for _, t := range All {
		if want[t.Name] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Render writes the snippet of one target for a report.
func Render(name string, r *report.Report, o target.Options) ([]byte, error) {
	t, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return t.Render(r, o)
}
