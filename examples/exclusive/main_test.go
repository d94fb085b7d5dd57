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
	const want = `job placed on gpu-b (80 GB free)
job placed on gpu-a (24 GB free)
next job: no GPU available (2 held, 0 acquirable)
gpu-b finished its job and was released
next job placed on gpu-b
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
