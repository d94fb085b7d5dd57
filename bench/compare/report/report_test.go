package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// raw is go test output as compare.sh saves it: headers, results, a
// comment, and a benchstat row, which must all be read or skipped.
const raw = `# In bench/: go test ...
goos: linux
pkg: github.com/crsched/crs/bench/compare
BenchmarkAcquireShared/impl=tight-2        1000   20.0 ns/op   0 B/op   0 allocs/op
BenchmarkAcquireShared/impl=heap-2         1000   30.0 ns/op   0 B/op   0 allocs/op
BenchmarkAcquireShared/impl=crs/heaps=8-2  1000    8.0 ns/op   0 B/op   0 allocs/op
BenchmarkAcquireShared/impl=tight-2        1000   22.0 ns/op   0 B/op   0 allocs/op
BenchmarkAcquireShared/impl=heap-2         1000   31.0 ns/op   0 B/op   0 allocs/op
BenchmarkAcquireShared/impl=crs/heaps=8-2  1000   12.0 ns/op   0 B/op   0 allocs/op
BenchmarkUpdate/impl=tight-2               1000  100 ns/op     0 B/op   0 allocs/op
BenchmarkUpdate/impl=crs/heaps=8-2         1000   90 ns/op    48 B/op   1 allocs/op
BenchmarkAcquireSharedParallel/impl=tight-2                 1000  10 ns/op  0 B/op  0 allocs/op
BenchmarkAcquireSharedParallel/impl=crs-adaptive/heaps=8-2  1000   2 ns/op  0 B/op  0 allocs/op
BenchmarkSelect/RoundRobin-2               1000    9.5 ns/op   0 B/op   0 allocs/op
BenchmarkFloor/AtomicAdd-2                 1000    5.0 ns/op   0 B/op   0 allocs/op
BenchmarkGetShard-2                        1000   11.0 ns/op   0 B/op   0 allocs/op
BenchmarkRankError/order=shard/heaps=8/goroutines=1-2  1  5e8 ns/op  833 rank-max  35.04 rank-mean  568 rank-p99  0 window-mean
BenchmarkLog line that is not a result
AcquireShared-2   21.00n ± ∞ ¹   30.50n ± ∞ ¹
PASS
`

func parsed(t *testing.T) results {
	t.Helper()
	res, err := parse(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestParseMedianAndRatio(t *testing.T) {
	res := parsed(t)
	if got := len(res.names); got != 11 {
		t.Fatalf("%d benchmarks, want 11: %v", got, res.names)
	}
	if m, ok := res.median("AcquireShared/impl=tight", "ns/op"); !ok || m != 21 {
		t.Fatalf("median of tight = %v, %v; want 21 (the mean of the middle two)", m, ok)
	}
	if r, ok := res.ratio("AcquireShared/impl=crs/heaps=8", "AcquireShared/impl=tight"); !ok || math.Abs(r-10.0/21) > 1e-12 {
		t.Fatalf("ratio = %v, %v; want 10/21", r, ok)
	}
	if m, ok := res.median("RankError/order=shard/heaps=8/goroutines=1", "rank-mean"); !ok || m != 35.04 {
		t.Fatalf("rank-mean = %v, %v; want 35.04", m, ok)
	}
	if _, ok := res.median("AcquireShared/impl=crs/heaps=1", "ns/op"); ok {
		t.Fatal("a benchmark that did not run has a median")
	}
}

func TestRoundRatiosPairSamplesInOrder(t *testing.T) {
	res := parsed(t)
	lo, hi, ok := res.roundRatios("AcquireShared/impl=crs/heaps=8", "AcquireShared/impl=tight")
	if !ok || math.Abs(lo-8.0/20) > 1e-12 || math.Abs(hi-12.0/22) > 1e-12 {
		t.Fatalf("round ratios = %v, %v, %v; want 8/20 and 12/22", lo, hi, ok)
	}
	// One sample each: no range to show.
	if _, _, ok := res.roundRatios("Update/impl=crs/heaps=8", "Update/impl=tight"); ok {
		t.Fatal("a range from one round")
	}
}

func TestRoundRatiosNeedRounds(t *testing.T) {
	for _, tt := range []struct{ why, input string }{
		{"a go test -count run: every tight sample before every crs one", `
BenchmarkUpdate/impl=tight-2        1000  100 ns/op
BenchmarkUpdate/impl=tight-2        1000  100 ns/op
BenchmarkUpdate/impl=crs/heaps=8-2  1000   90 ns/op
BenchmarkUpdate/impl=crs/heaps=8-2  1000   91 ns/op
`},
		{"a round lost: the counts differ", `
BenchmarkUpdate/impl=tight-2        1000  100 ns/op
BenchmarkUpdate/impl=crs/heaps=8-2  1000   90 ns/op
BenchmarkUpdate/impl=tight-2        1000  100 ns/op
BenchmarkUpdate/impl=tight-2        1000  100 ns/op
BenchmarkUpdate/impl=crs/heaps=8-2  1000   91 ns/op
`},
	} {
		res, err := parse(strings.NewReader(tt.input))
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi, ok := res.roundRatios("Update/impl=crs/heaps=8", "Update/impl=tight"); ok {
			t.Errorf("%s: range %v-%v, want none", tt.why, lo, hi)
		}
	}
}

func TestParseRejectsBrokenResult(t *testing.T) {
	if _, err := parse(strings.NewReader("BenchmarkX-2 10 5 ns/op 3\n")); err == nil {
		t.Fatal("a result whose values and units do not pair up parsed")
	}
}

func TestTargets(t *testing.T) {
	res := parsed(t)
	for _, tt := range []struct {
		target       ratioTarget
		wantMeasured string
		wantVerdict  string
	}{
		{ratioTargets[0], "0.48x (rounds 0.40-0.55), 0 allocs", "met"}, // shared Acquire: 10/21 <= 0.5; 8/20, 12/22
		{ratioTargets[2], "0.20x, 0 allocs", "met"},                    // adaptive: 2/10 <= 0.25
		{ratioTargets[5], "0.90x, 1 allocs", "**not met**"},            // Update: fast enough, but allocates
		{ratioTargets[3], missing, "no data"},
	} {
		m, v := checkRatio(res, tt.target)
		if m != tt.wantMeasured || v != tt.wantVerdict {
			t.Errorf("%s: %q, %q; want %q, %q", tt.target.label, m, v, tt.wantMeasured, tt.wantVerdict)
		}
	}
	if m, v := checkStrategy(res, strategies[0]); v != "met" || m != "9.5 ns (1.90x its floor), 0 allocs" {
		t.Errorf("round robin at 9.5 ns, floor 5 ns: %q, %s; want its ratio to the floor, met", m, v)
	}
	if m, _ := checkStrategy(res, strategies[3]); m != "11 ns, 0 allocs" {
		t.Errorf("ring, which has no floor: %q", m)
	}
	if _, v := checkStrategy(res, strategies[3]); v != "**not met**" {
		t.Errorf("ring at 11 ns: %s, want not met", v)
	}
}

func TestRunWritesEverySection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.txt")
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(path, &out); err != nil {
		t.Fatal(err)
	}
	mustContain(t, out.String(),
		"| shared Acquire, round robin | 21 ns | 30.5 ns (1.45x) | – | 10 ns (0.48x) | – | 0 / 0 / – / 0 / – |",
		"| shared Acquire, sequential | <= 0.5x, 0 allocs | 0.48x (rounds 0.40-0.55), 0 allocs | met |",
		"| round robin | 9.5 ns (1.90x its floor) | – | 0 |",
		"| local (no target) | – | – | – |",
		"| floor: one locked add (`atomic.Uint64.Add`) | 5 ns | n/a | 0 |",
		"| floor: one `math/rand/v2.Uint64` | – | n/a | – |",
		"| order=shard/heaps=8/goroutines=1 | 35 | 568 | 833 | 0 |",
	)
}

// mustContain fails t for each of wants that is not a whole line of the
// report got.
func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	for _, want := range wants {
		if !slices.Contains(lines, want) {
			t.Errorf("report lacks the line %q:\n%s", want, got)
		}
	}
}
