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
	const want = `acquired key-1 (quota 900)
released key-1
cooldown started: excluded key-1, 1 of 2 keys acquirable
cooldown ended: included key-1, 2 of 2 keys acquirable
key-1 rested at least 100ms
acquired key-1 (quota 900)
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
