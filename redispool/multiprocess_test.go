package redispool

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The figure is 10 s; the default keeps go test -race within the
// CI budget. The long run: go test -run AcrossProcesses . -args -exclusive-for=10s
var exclusiveFor = flag.Duration("exclusive-for", 2*time.Second, "how long TestNoResourceIsHeldTwiceAcrossProcesses runs")

func TestNoResourceIsHeldTwiceAcrossProcesses(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	const processes, goroutines, resources = 3, 50, 4
	for i := range resources {
		add(t, p, Resource{ID: fmt.Sprintf("r%d", i)})
	}
	dir := t.TempDir()
	var cmds []*childProcess
	for i := range processes {
		cmds = append(cmds, startChild(t, roleExclusive, map[string]string{
			"ADDR":        testAddr,
			"POOL":        p.name,
			"TTL_MS":      "30000",
			"GOROUTINES":  strconv.Itoa(goroutines),
			"DURATION_MS": strconv.FormatInt(exclusiveFor.Milliseconds(), 10),
			"LOG":         filepath.Join(dir, fmt.Sprintf("holds-%d", i)),
		}))
	}
	for i, cmd := range cmds {
		if err := cmd.wait(*exclusiveFor + time.Minute); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	var all []hold
	for i := range processes {
		holds, err := readHolds(filepath.Join(dir, fmt.Sprintf("holds-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if len(holds) == 0 {
			t.Fatalf("process %d acquired nothing", i)
		}
		t.Logf("process %d: %d holds", i, len(holds))
		all = append(all, holds...)
	}
	t.Logf("%d holds of %d resources by %d processes x %d goroutines in %v", len(all), resources, processes, goroutines, *exclusiveFor)
	for _, problem := range holdProblems(all) {
		t.Error(problem)
	}
	if s := stats(t, p); s.Leases != 0 || s.Available != resources || s.ExpiredLeases != 0 {
		t.Errorf("after the run: %+v", s)
	}
	checkInvariants(t, c, p)
}

// holdProblems checks a log of holds: per resource, the holds do not
// overlap and their tokens increase in the order of the holds; tokens
// are unique over the pool.
func holdProblems(holds []hold) []string {
	var bad []string
	byID := map[string][]hold{}
	tokens := map[uint64]bool{}
	for _, h := range holds {
		byID[h.id] = append(byID[h.id], h)
		if tokens[h.token] {
			bad = append(bad, fmt.Sprintf("token %d handed out twice", h.token))
		}
		tokens[h.token] = true
	}
	for id, hs := range byID {
		sort.Slice(hs, func(i, j int) bool { return hs[i].start < hs[j].start })
		for i := 1; i < len(hs); i++ {
			prev, cur := hs[i-1], hs[i]
			if cur.start < prev.end {
				bad = append(bad, fmt.Sprintf("%s held twice: #%d [%d, %d] and #%d [%d, %d]",
					id, prev.token, prev.start, prev.end, cur.token, cur.start, cur.end))
			}
			if cur.token <= prev.token {
				bad = append(bad, fmt.Sprintf("%s: token %d after %d", id, cur.token, prev.token))
			}
		}
	}
	return bad
}

func TestHoldProblemsFindsOverlapsAndStaleTokens(t *testing.T) {
	good := []hold{{"a", 1, 0, 10}, {"b", 2, 5, 20}, {"a", 3, 10, 15}, {"b", 4, 20, 30}}
	if bad := holdProblems(good); len(bad) != 0 {
		t.Fatalf("a valid log is reported: %v", bad)
	}
	for name, holds := range map[string][]hold{
		"overlap":          {{"a", 1, 0, 10}, {"a", 2, 9, 12}},
		"decreasing token": {{"a", 2, 0, 10}, {"a", 1, 10, 12}},
		"repeated token":   {{"a", 1, 0, 10}, {"b", 1, 0, 10}},
	} {
		if bad := holdProblems(holds); len(bad) == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
}

func readHolds(path string) ([]hold, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var holds []hold
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var h hold
		if _, err := fmt.Sscanf(line, "%s %d %d %d", &h.id, &h.token, &h.start, &h.end); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		holds = append(holds, h)
	}
	return holds, nil
}
