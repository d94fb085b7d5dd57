package main

import (
	"bytes"
	"testing"
)

// The expected assignments pin the affinity ring's routing: a change here
// would move users between upstreams after an upgrade.
func TestRunPrintsTheExpectedOutput(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v", err)
	}
	const want = `alice -> upstream-6, upstream-6, upstream-6
bob   -> upstream-6, upstream-6, upstream-6
carol -> upstream-8, upstream-8, upstream-8
dave  -> upstream-6, upstream-6, upstream-6
after every score changed, 4 of 4 users kept their upstream
alice while upstream-6 is excluded -> upstream-3; after -> upstream-6
Acquire without affinity -> upstream-5, upstream-6, upstream-7, upstream-8
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
