package httpclient

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Transport adds the credentials and headers to every request, gives each
// attempt its own timeout and retries failed ones with capped exponential
// backoff and full jitter: wait uniform(0, min(cap, base x 2^n)) before
// retry n+1 (docs/method.md#backoff-with-jitter: the tool practises what it
// recommends). It retries connection failures, attempt timeouts, 429, 502,
// 503 and 504, honouring Retry-After as a lower bound; never 4xx otherwise
// (a wrong query or credentials fail the same way again) nor 500.
type Transport struct {
	next              http.RoundTripper
	user, pass, token string
	headers           http.Header
	attempts          int
	perTry            time.Duration
	base, cap         time.Duration
	sleep             func(context.Context, time.Duration) error
	jitter            func() float64

	mu   sync.Mutex
	last Outcome // of the latest request, for error messages
}

// Outcome is what the last request ended with.
type Outcome struct {
	Attempts int
	Status   int  // 0: no HTTP answer
	TimedOut bool // the last attempt hit its timeout
}

func (t *Transport) lastOutcome() Outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// RoundTrip sends req, retrying as the type's comment says.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var o Outcome
	defer func() {
		t.mu.Lock()
		t.last = o
		t.mu.Unlock()
	}()
	for n := 0; ; n++ {
		o.Attempts = n + 1
		actx, cancel := context.WithTimeout(ctx, t.perTry)
		r := req.Clone(actx)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				cancel()
				return nil, err
			}
			r.Body = body
		}
		for k, vs := range t.headers {
			r.Header[k] = vs
		}
		switch {
		case t.token != "":
			r.Header.Set("Authorization", "Bearer "+t.token)
		case t.user != "":
			r.SetBasicAuth(t.user, t.pass)
		}
		resp, err := t.next.RoundTrip(r)
		o.TimedOut = err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		o.Status = 0
		if resp != nil {
			o.Status = resp.StatusCode
		}
		retry, after := t.retryable(ctx, resp, err)
		if !retry || n+1 >= t.attempts {
			if resp != nil {
				// The attempt's context must live until the body is read.
				resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
			} else {
				cancel()
			}
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		cancel()
		if err := t.sleep(ctx, max(Backoff(t.base, t.cap, t.jitter(), n), after)); err != nil {
			return nil, err
		}
	}
}

// Backoff is full jitter before retry n+1: uniform(0, min(cap, base x
// 2^n)), with r, in [0, 1), the random factor.
func Backoff(base, cap time.Duration, r float64, n int) time.Duration {
	ceiling := cap
	if n < 30 {
		ceiling = min(cap, base<<n)
	}
	return time.Duration(r * float64(ceiling))
}

// retryable says whether an attempt's failure may succeed later, and the
// server's Retry-After (capped) when it gave one.
func (t *Transport) retryable(ctx context.Context, resp *http.Response, err error) (bool, time.Duration) {
	if ctx.Err() != nil {
		return false, 0
	}
	if err != nil {
		return true, 0 // connection refused, reset, attempt timeout
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, min(retryAfter(resp.Header.Get("Retry-After")), t.cap)
	}
	return false, 0
}

// retryAfter reads Retry-After as seconds or an HTTP date; 0 when absent.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(time.Until(when), 0)
	}
	return 0
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
