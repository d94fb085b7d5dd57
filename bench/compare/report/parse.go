package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results holds the samples of each benchmark, by name (without
// "Benchmark" and without the GOMAXPROCS suffix, e.g.
// "AcquireShared/impl=crs/heaps=8") and unit ("ns/op", "allocs/op",
// "rank-mean", ...): one value per line of output, that is per -count.
type results struct {
	samples map[string]map[string][]float64
	names   []string // in the order they first ran
	// lines holds, for each name, the line of the input each of its
	// samples came from, in order: which samples were taken in the same
	// round (see inRounds).
	lines map[string][]int
}

// procsSuffix is the "-N" go test appends to a name when GOMAXPROCS > 1.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// parse reads go test's benchmark lines and ignores every other line, so
// that the raw file may also hold the go test headers, the commands that
// produced it and benchstat's tables (whose rows do not start with
// "Benchmark").
func parse(r io.Reader) (results, error) {
	res := results{samples: map[string]map[string][]float64{}, lines: map[string][]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result: e.g. a "Benchmark..." line from a log
		}
		if len(f)%2 != 0 {
			return results{}, fmt.Errorf("line %d: values and units do not pair up: %q", line, sc.Text())
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		units := res.samples[name]
		if units == nil {
			units = map[string][]float64{}
			res.samples[name] = units
			res.names = append(res.names, name)
		}
		res.lines[name] = append(res.lines[name], line)
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return results{}, fmt.Errorf("line %d: %w", line, err)
			}
			units[f[i+1]] = append(units[f[i+1]], v)
		}
	}
	return res, sc.Err()
}

// median returns the median of name's samples in unit, as benchstat
// computes it (the mean of the middle two of an even count), and whether
// there were any.
func (r results) median(name, unit string) (float64, bool) {
	xs := slices.Clone(r.samples[name][unit])
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2, true
	}
	return xs[m], true
}

// ratio returns median(name)/median(base) in ns/op.
func (r results) ratio(name, base string) (float64, bool) {
	n, ok1 := r.median(name, "ns/op")
	d, ok2 := r.median(base, "ns/op")
	if !ok1 || !ok2 || d == 0 {
		return 0, false
	}
	return n / d, true
}

// inRounds reports whether name and other ran in rounds: at least twice
// each, as often, and each sample of name between other's samples of
// the rounds before and after its own, as compare.sh's INTERLEAVE=1 runs
// them. Then their i-th samples were taken in the same round, seconds
// apart; otherwise (a go test -count run) all of one's samples may come
// before all of the other's.
func (r results) inRounds(name, other string) bool {
	a, b := r.lines[name], r.lines[other]
	if len(a) < 2 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if (i > 0 && a[i] < b[i-1]) || (i+1 < len(b) && a[i] > b[i+1]) {
			return false
		}
	}
	return true
}

// roundRatios returns the lowest and highest of name's ns/op samples
// over base's, round by round, and whether the two ran in rounds (see
// inRounds): each ratio is then one round's, and their range shows how
// far a median ratio is from a target.
func (r results) roundRatios(name, base string) (lo, hi float64, ok bool) {
	ns, ds := r.samples[name]["ns/op"], r.samples[base]["ns/op"]
	if !r.inRounds(name, base) || len(ns) != len(ds) {
		return 0, 0, false
	}
	for i := range ns {
		if ds[i] == 0 {
			return 0, 0, false
		}
		x := ns[i] / ds[i]
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi, true
}
