// Package e2e holds end-to-end tests against real servers (nginx, HAProxy,
// Prometheus from Debian's packages) started on loopback ports, headless
// Chromium, and HdrHistogram's Java implementation for interval logs. Without
// TUNETIMEOUT_E2E=1 a test whose server binary is missing skips, saying what
// to install; with it (as in .ci/run) the test fails instead.
package e2e
