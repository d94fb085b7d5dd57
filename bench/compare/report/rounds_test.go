package main

import (
	"bytes"
	"strings"
	"testing"
)

// twoRounds is an interleaved run of two rounds, the second on a slower
// placement of the cores; the adaptive row lost its second round.
const twoRounds = `
BenchmarkAcquireSharedParallel/impl=tight-2                 1000  10 ns/op
BenchmarkAcquireSharedParallel/impl=crs/heaps=8-2           1000  12 ns/op
BenchmarkAcquireSharedParallel/impl=crs-adaptive/heaps=8-2  1000   4 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=tight-2       1000  100 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs/heaps=8-2 1000   50 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs-local/heaps=8-2 1000 40 ns/op
BenchmarkLineRoundTrip-2                                    1000   90 ns/op
BenchmarkAcquireSharedParallel/impl=tight-2                 1000  10 ns/op
BenchmarkAcquireSharedParallel/impl=crs/heaps=8-2           1000  14 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=tight-2       1000  100 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs/heaps=8-2 1000  190 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs-local/heaps=8-2 1000 41 ns/op
BenchmarkLineRoundTrip-2                                    1000  400 ns/op
`

func TestRoundsPutEachRoundsRatiosBesideItsRoundTrip(t *testing.T) {
	res, err := parse(strings.NewReader(twoRounds))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeRounds(&out, res)
	mustContain(t, out.String(),
		"| round | line round trip | shared Acquire, parallel, round robin | shared Acquire, parallel, adaptive | exclusive Acquire + Release, parallel | exclusive Acquire + Release, parallel, local |",
		"| --- | --- | --- | --- | --- | --- |",
		"| 1 | 90 ns | 1.20x (12 ns) | – | 0.50x (50 ns) | 0.40x (40 ns) |",
		"| 2 | 400 ns | 1.40x (14 ns) | – | 1.90x (190 ns) | 0.41x (41 ns) |",
	)
}

func TestRoundsNeedTheTargetsRunInRoundsWithTheRoundTrip(t *testing.T) {
	for _, tt := range []struct{ why, input string }{
		{"no round trip", raw},
		{"one round", `
BenchmarkAcquireReleaseExclusiveParallel/impl=tight-2       1000  100 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs/heaps=8-2 1000   50 ns/op
BenchmarkLineRoundTrip-2                                    1000   90 ns/op
`},
		{"a go test -count run: each benchmark's samples back to back", `
BenchmarkAcquireReleaseExclusiveParallel/impl=tight-2       1000  100 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=tight-2       1000  100 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs/heaps=8-2 1000   50 ns/op
BenchmarkAcquireReleaseExclusiveParallel/impl=crs/heaps=8-2 1000  190 ns/op
BenchmarkLineRoundTrip-2                                    1000   90 ns/op
BenchmarkLineRoundTrip-2                                    1000  400 ns/op
`},
	} {
		res, err := parse(strings.NewReader(tt.input))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		writeRounds(&out, res)
		if out.Len() != 0 {
			t.Errorf("%s: rounds written:\n%s", tt.why, out.String())
		}
	}
}
