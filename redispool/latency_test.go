package redispool

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

func TestWakeLatencyAcrossProcesses(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	const trials = 200
	child := startChild(t, roleWaiter, map[string]string{"ADDR": testAddr, "POOL": p.name, "TTL_MS": "30000"})
	var latencies []time.Duration
	for i := range trials + 1 {
		held := mustAcquire(t, p)
		child.writeLine(t, "go")
		if line := child.readLine(t); line != "parked" {
			t.Fatalf("child said %q", line)
		}
		released := time.Now().UnixNano()
		mustRelease(t, held)
		var woken int64
		if line := child.readLine(t); !scanned(line, "got %d", &woken) {
			t.Fatalf("child said %q", line)
		}
		if i > 0 { // the first wait also opened the subscription
			latencies = append(latencies, time.Duration(woken-released))
		}
	}
	_ = child.stdin.Close()
	if err := child.wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	q := func(f float64) time.Duration { return latencies[int(f*float64(len(latencies)-1))] }
	t.Logf("wake latency, release in this process to return of Acquire in another, %d trials: p50 %v, p90 %v, p99 %v, max %v",
		len(latencies), q(0.5), q(0.9), q(0.99), latencies[len(latencies)-1])
}

func scanned(line, format string, args ...any) bool {
	_, err := fmt.Sscanf(line, format, args...)
	return err == nil
}
