// Package e2e holds end-to-end tests against real servers (nginx, HAProxy,
// Prometheus from Debian's packages) started on loopback ports, headless
// Chromium, HdrHistogram's Java implementation for interval logs, and the
// pinned Helm of .ci/tools.sh for the chart (chart_test.go). Without
// TUNETIMEOUT_E2E=1 a test whose server binary is missing skips, saying what
// to install; with it (as in .ci/run) the test fails instead.
//
// # A busy machine
//
// The tests must hold on a loaded CI machine, where the servers, the
// upstreams and the clients all wait for the CPU. So they compare the tool's
// figures with the server's own (nginx's $request_time, HAProxy's Ta,
// Apache's %D, Caddy's duration, Prometheus's answers to the same query),
// exactly for each line and within the histogram's precision for each
// percentile; the clocks of the upstream and the client only bracket the
// server's, which holds however late each process runs; no check compares a
// time with an absolute latency. They wait for servers and for data by
// polling with a generous deadline (a bound, never an expectation), and every
// request loop is bounded.
//
// TUNETIMEOUT_E2E_LOAD=N runs the package on such a machine: N busy
// goroutines per core (runtime.NumCPU) hash a block over and over for the
// whole run, each on a thread of its own, with GOMAXPROCS raised by as many,
// so the kernel shares the cores among them, the tests and the servers the
// tests start, as it would with a busy neighbour's processes:
//
//	TUNETIMEOUT_E2E=1 TUNETIMEOUT_E2E_LOAD=2 go test ./e2e -count=1
//
// .ci/run runs the package so once, beside the plain go test ./...; N=8 is
// about the load average of 19 on 2 cores that once made these tests fail.
package e2e
