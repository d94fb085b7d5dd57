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
	const want = `Len before: 0
BatchAdd of 3 proxies: ok, Len 3
BatchAdd with an existing key: rejected (duplicate key), Len 3
BatchAdd with a key repeated in the batch: rejected (duplicate key), Len 3
10.0.0.4:8080 from the rejected batch: not in the pool
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
