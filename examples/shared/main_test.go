package main

import (
	"bytes"
	"testing"
)

func TestRunPrintsTheExpectedOutput(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run: %v", err)
	}
	const want = `acquire 1: db-replica-b (3 conns)
acquire 2: db-replica-b (3 conns)
acquire 3: db-replica-b (3 conns)
still acquirable: 3 of 3 replicas, 0 held
Release under the shared policy: not needed (ErrNotExclusive)
after db-replica-b reports 20 conns: acquire returns db-replica-c (7 conns)
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
