package main

import (
	"bytes"
	"testing"
)

func TestRunPrintsTheExpectedOutput(t *testing.T) {
	var buf bytes.Buffer
	if err := run(&buf); err != nil {
		t.Fatal(err)
	}
	want := `answered with openai-1
openai-1: 429, resting 150ms
groq-1: upstream error
groq-1: upstream error
available now: 0 (suspended 1, ejected 1); waiting...
answered with openai-1 after its retry-after
`
	if got := buf.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
