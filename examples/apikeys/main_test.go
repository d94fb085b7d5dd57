package main

import (
	"bytes"
	"os"
	"strings"
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

// The README's API-key pool is a piece of this program, character for
// character, so that what a new user copies compiles and runs.
func TestReadmeAPIKeyPoolIsInThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(readme), "\n## An API-key pool\n")
	if !found {
		t.Fatal("README.md has no \"## An API-key pool\" section")
	}
	_, block, found := strings.Cut(section, "```go\n")
	if !found {
		t.Fatal("README.md's API-key pool has no Go block")
	}
	block, _, _ = strings.Cut(block, "```\n")
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(program), block) {
		t.Fatalf("README.md's API-key pool is not a piece of examples/apikeys/main.go:\n%s", block)
	}
}
