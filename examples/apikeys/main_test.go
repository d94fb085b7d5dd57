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
	want := `openai-1: 429, resting 150ms
groq-1: upstream error
groq-1: upstream error
available now: 0 (suspended 1, ejected 1); waiting...
openai-1: back after its retry-after, served the request
`
	if got := buf.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}
