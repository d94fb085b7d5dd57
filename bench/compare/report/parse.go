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
}

// procsSuffix is the "-N" go test appends to a name when GOMAXPROCS > 1.
var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// parse reads go test's benchmark lines and ignores every other line, so
// that the raw file may also hold the go test headers, the commands that
// produced it and benchstat's tables (whose rows do not start with
// "Benchmark").
func parse(r io.Reader) (results, error) {
	res := results{samples: map[string]map[string][]float64{}}
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

// roundRatios returns the lowest and highest of name's ns/op samples
// over base's, sample by sample, and whether there were at least two
// pairs. With compare.sh's INTERLEAVE=1 the i-th sample of every
// benchmark comes from the i-th round, so each ratio is one round's, and
// their range shows how far a median ratio is from a target; without
// it, the pairs are of samples taken seconds apart.
func (r results) roundRatios(name, base string) (lo, hi float64, ok bool) {
	ns, ds := r.samples[name]["ns/op"], r.samples[base]["ns/op"]
	if len(ns) < 2 || len(ns) != len(ds) {
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
