package gatewayapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/kube"
)

// Reading the Kubernetes Gateway API (gateway.networking.k8s.io, any
// version): the rules of HTTPRoutes with their timeouts (GEP-1742) and
// retry (GEP-1731; standard channel since v1.7.0), and the rules of
// GRPCRoutes, which have neither. The fields' meaning is that of the doc
// comments of sigs.k8s.io/gateway-api v1.7.0 apis/v1 (HTTPRouteTimeouts,
// HTTPRouteRetry).

// Detect reports whether a file holds Gateway API
// resources.
func Detect(_ string, data []byte) bool {
	return kube.Detect(data, kube.GatewayGroup+"/")
}

// ReadConfig reads the HTTPRoutes and GRPCRoutes of a manifest
// stream, one object per rule (Kind "HTTPRoute rule", "GRPCRoute rule").
// Gateways, TCP, TLS and UDP routes and policies are left out. The Linkerd
// annotations an HTTPRoute may carry are the linkerd target's to read.
func ReadConfig(file string, data []byte, _ target.Opener, b *budget.Budget) ([]target.Object, error) {
	res, err := kube.Objects(target.OrNew(b), file, data)
	if err != nil {
		return nil, err
	}
	var out []target.Object
	for _, o := range res {
		if o.Group != kube.GatewayGroup || (o.Kind != "HTTPRoute" && o.Kind != "GRPCRoute") {
			continue
		}
		rules, err := kube.GatewayRules(o)
		if err != nil {
			return nil, err
		}
		ann, err := kube.Annotations(o, kube.LinkerdAnnotationPrefixes...)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			obj := r.Object("gateway-api", o.Kind+" rule")
			if o.Kind == "HTTPRoute" {
				if err := gatewayTimeouts(&obj, o.File, r); err != nil {
					return nil, err
				}
			} else {
				obj.Notes = append(obj.Notes, "a GRPCRoute has no timeouts or retry (GEP-1742 and GEP-1731 cover HTTPRoute): the implementation's defaults apply")
			}
			if kube.LinkerdAnnotated(ann) {
				obj.Notes = append(obj.Notes, "Linkerd's timeout and retry annotations on this route are read by the linkerd target")
			}
			out = append(out, obj)
		}
	}
	kube.Finish(out)
	return out, nil
}

// gatewayTimeouts reads an HTTPRoute rule's timeouts and retry.
// timeouts.request bounds the whole request, retries included, and
// timeouts.backendRequest one request to the backend; "0s" disables either
// (HTTPRouteTimeouts); unspecified, the behaviour is the implementation's.
// retry.attempts counts the retries ("the maximum number of times an
// individual request from the gateway to a backend should be retried").
func gatewayTimeouts(obj *target.Object, f string, r kube.GatewayRule) error {
	tw := r.Where + ".timeouts"
	t, err := kube.Mapping(f, kube.Field(r.Node, "timeouts"), tw)
	if err != nil {
		return err
	}
	req, err := kube.GatewayDurationSetting(f, kube.Field(t, "request"), tw+".request")
	if err != nil {
		return err
	}
	back, err := kube.GatewayDurationSetting(f, kube.Field(t, "backendRequest"), tw+".backendRequest")
	if err != nil {
		return err
	}
	obj.Timeout, obj.PerTryTimeout = req, back
	if req != nil && back != nil && req.Value != 0 && back.Value > req.Value {
		return target.ErrorAt(back.Pos, "%s.backendRequest %s is longer than request %s: the CRD refuses it (\"backendRequest timeout cannot be longer than request timeout\")", tw, back.Raw, req.Raw)
	}
	if req == nil {
		obj.Notes = append(obj.Notes, "no timeouts.request: the request timeout is the implementation's (GEP-1742)")
	}
	rw := r.Where + ".retry"
	rt, err := kube.Mapping(f, kube.Field(r.Node, "retry"), rw)
	if rt == nil || err != nil {
		return err
	}
	obj.Notes = append(obj.Notes, "retry is a standard-channel field since Gateway API v1.7.0 (experimental before): an older standard-channel CRD drops it without a word")
	an := kube.Field(rt, "attempts")
	n, raw, ok, err := kube.Int(f, an, rw+".attempts", 32)
	switch {
	case err != nil:
		return err
	case ok && n < 0:
		return target.ErrorAt(target.NodePos(f, an), "%s.attempts %s: the CRD's minimum is 0", rw, raw)
	case ok && n == 0:
		// "An explicit zero value MUST disable retries" (v1.7.0).
		obj.Attempts = target.Set(1, target.NodePos(f, an), raw)
		obj.Notes = append(obj.Notes, "retries disabled: attempts is 0 (Gateway API v1.7.0; an older experimental-channel CRD refuses it, its minimum was 1)")
		return nil
	case ok:
		obj.Attempts = target.Set(int(n)+1, target.NodePos(f, an), raw)
		obj.RetryNonIdempotent = kube.RetrySetting(kube.RetriesNonIdempotent(obj.Matches), obj.Attempts)
	default:
		obj.Notes = append(obj.Notes, "retry without attempts: the v1.7.0 CRD defaults it to 1 retry; with older CRDs how often is the implementation's")
	}
	if cn := kube.Field(rt, "codes"); cn != nil {
		items, err := kube.List(f, cn, rw+".codes")
		if err != nil {
			return err
		}
		var codes []string
		for j, it := range items {
			c, raw, _, err := kube.Int(f, it, fmt.Sprintf("%s.codes[%d]", rw, j), 32)
			if err != nil {
				return err
			}
			if c < 400 || c > 599 {
				return target.ErrorAt(target.NodePos(f, it), "%s.codes[%d] %s: the CRD takes 400 to 599", rw, j, raw)
			}
			codes = append(codes, strconv.Itoa(int(c)))
		}
		obj.RetryOn = target.Set(codes, target.NodePos(f, cn), strings.Join(codes, ","))
	}
	obj.Notes = append(obj.Notes, "HTTPRouteRetry (v1.7.0): implementations SHOULD also retry a connection that could not be made and a request refused before processing, and an attempt that reaches backendRequest is retried")
	if b, err := kube.GatewayDurationSetting(f, kube.Field(rt, "backoff"), rw+".backoff"); err != nil {
		return err
	} else if b != nil {
		obj.BackoffBase = b
		obj.Notes = append(obj.Notes, "retry.backoff is a minimum: the implementation may grow, cap and jitter it")
	}
	return nil
}
