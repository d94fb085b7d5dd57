package main

import (
	"os"
	"strings"
	"testing"
)

func Example() {
	main()
	// Output: Acquired: worker-2
}

// The README's Quick start is this program, character for character, so
// that what a new user copies compiles and prints what it says.
func TestReadmeQuickStartIsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(readme), "\n## Quick start\n")
	if !found {
		t.Fatal("README.md has no \"## Quick start\" section")
	}
	_, block, found := strings.Cut(section, "```go\n")
	if !found {
		t.Fatal("README.md's Quick start has no Go block")
	}
	block, _, _ = strings.Cut(block, "```\n")
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(program) {
		t.Fatalf("README.md's Quick start differs from examples/quickstart/main.go:\n--- README\n%s--- main.go\n%s", block, program)
	}
}
