package loadtest

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPlainProgressPrintsOneLinePerPeriod(t *testing.T) {
	var out bytes.Buffer
	p, _ := NewProgress(&out, "plain")
	for i := 1; i <= 25; i++ { // 2.5 s of samples at 100 ms
		p.update(Sample{T: float64(i) / 10, Completed: uint64(i * 100), InFlight: 7}, 3*time.Second)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Contains(out.String(), "\r") {
		t.Fatalf("want 2 plain lines, got %q", out.String())
	}
	if !strings.Contains(lines[0], "1.0s / 3.0s") || !strings.Contains(lines[0], "1,000 req/s") || !strings.Contains(lines[0], "in-flight 7") {
		t.Fatalf("line %q", lines[0])
	}
}

func TestTerminalProgressRewritesOneLineAndClearsIt(t *testing.T) {
	var out bytes.Buffer
	p, _ := NewProgress(&out, "line")
	for i := 1; i <= 10; i++ {
		p.update(Sample{T: float64(i) / 10, Completed: uint64(i)}, time.Second)
	}
	p.finish()
	s := out.String()
	if strings.Contains(s, "\n") || strings.Count(s, "\r") < 3 || !strings.HasSuffix(s, "\r") {
		t.Fatalf("status line output %q", s)
	}
}

func TestProgressOffPrintsNothing(t *testing.T) {
	if p, err := NewProgress(os.Stdout, "off"); p != nil || err != nil {
		t.Fatalf("off: %v, %v", p, err)
	}
}

func TestAFileIsNotATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file reported as a terminal")
	}
}

func TestProgressPastTheEndSaysItIsWaitingForWorkers(t *testing.T) {
	var out bytes.Buffer
	p, _ := NewProgress(&out, "plain")
	p.update(Sample{T: 4.2, Completed: 100, Unfinished: 900000}, 4*time.Second)
	line := out.String()
	if !strings.Contains(line, "stopping: waiting for 900,000 workers") || strings.Contains(line, "4.2s / 4.0s") {
		t.Fatalf("line %q", line)
	}
}

func TestProgressNotesAreWholeLinesOnATerminalToo(t *testing.T) {
	var out bytes.Buffer
	p, _ := NewProgress(&out, "line")
	p.update(Sample{T: 1, Completed: 10}, 3*time.Second)
	p.note("started 1,000,000 workers in 8.20s, before the clock")
	s := out.String()
	if !strings.HasSuffix(s, "\rstarted 1,000,000 workers in 8.20s, before the clock\n") {
		t.Fatalf("output %q", s)
	}
	out.Reset()
	p, _ = NewProgress(&out, "plain")
	p.note("hello")
	if out.String() != "hello\n" {
		t.Fatalf("plain note %q", out.String())
	}
}
