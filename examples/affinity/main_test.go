package main

import (
	"bytes"
	"testing"
)

// The expected assignments pin the hash ring's routing: a change here
// would move users between upstreams after an upgrade.
func TestRunPrintsTheExpectedOutput(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v", err)
	}
	const want = `alice -> upstream-4, upstream-4, upstream-4
bob   -> upstream-3, upstream-3, upstream-3
carol -> upstream-1, upstream-1, upstream-1
dave  -> upstream-2, upstream-2, upstream-2
Acquire without affinity -> upstream-1, upstream-2, upstream-3, upstream-4
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
