package loadtest

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// scenarioConfig is the Config of -scenario name with no other flag.
func scenarioConfig(t *testing.T, name string) Config {
	t.Helper()
	o, err := ParseFlags([]string{"-scenario", name}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return o.Config
}

func TestTheCooldownScenarioIsBoundByItsRestingResources(t *testing.T) {
	c := scenarioConfig(t, Cooldown)
	if c.Policy != config.Exclusive || c.Cooldown <= 0 {
		t.Fatalf("the cooldown scenario runs %v resources with a %v cooldown", c.Policy, c.Cooldown)
	}
	w := [2]int64{0, int64(time.Second)}
	l := theoreticalLimit(c, float64(c.Latency.Mean()), int64(c.Workers)*(w[1]-w[0]), w)
	slots := float64(c.Resources * c.Capacity)
	want := slots / (c.Latency.Mean() + c.Cooldown).Seconds()
	if l.Bottleneck != "pool" || math.Abs(l.PerSecond-want) > 1e-9 {
		t.Fatalf("limit %+v, want %v req/s bound by the pool", l, want)
	}
	// A waiter queues behind the others for slots that each free up at
	// the pool's rate: its mean wait must leave the acquire timeout room,
	// or most requests time out and the run shows overload, not cooldowns.
	wait := float64(c.Workers-int(slots)) / l.PerSecond
	if wait > c.Timeout.Seconds()/2 {
		t.Fatalf("%d workers on %v slots wait %.2fs on average for a %v timeout", c.Workers, slots, wait, c.Timeout)
	}
}

func TestAThroughputOfMostlyTimeoutsIsFlagged(t *testing.T) {
	r := &Report{
		Config:     ConfigReport{Policy: "exclusive", Resources: 4, Capacity: 1, CooldownNs: int64(100 * time.Millisecond)},
		Requests:   Requests{Attempts: 1000, Success: 100, AcquireTimeouts: 900},
		Throughput: Throughput{WindowNs: int64(10 * time.Second), Completed: 100, PerSecond: 10, Ratio: 1.1},
	}
	r.Throughput.Limit = Limit{PerSecond: 9.09, Bottleneck: "pool", MeanHoldNanos: int64(340 * time.Millisecond)}
	var b strings.Builder
	writeThroughput(&b, r)
	text := b.String()
	for _, want := range []string{"warning: 90.00% of requests timed out", "only 100 calls"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	r.Requests = Requests{Attempts: 100000, Success: 99000, AcquireTimeouts: 1000}
	r.Throughput.Completed, r.Throughput.Ratio = 99000, 0.98
	b.Reset()
	writeThroughput(&b, r)
	if strings.Contains(b.String(), "warning") || strings.Contains(b.String(), "only") {
		t.Errorf("a healthy run flagged:\n%s", b.String())
	}
}

func TestTheHelpStatesTheFailureShareTheFailureScenarioConfigures(t *testing.T) {
	c := scenarioConfig(t, Failure)
	// Calls spread evenly: the unhealthy resources' share at their rate,
	// the others' at the failure rate.
	u, n := float64(c.Unhealthy), float64(c.Resources)
	want := (u*c.UnhealthyRate + (n-u)*c.FailureRate) / n
	if got := c.FailureShare(); math.Abs(got-want) > 1e-12 {
		t.Fatalf("FailureShare %v, want %v", got, want)
	}
	var out bytes.Buffer
	ParseFlags([]string{"-h"}, &out)
	help := strings.Join(strings.Fields(out.String()), " ")
	stated := strings.Join(strings.Fields(whole(want)+" of all calls"), " ")
	if !strings.Contains(help, stated) {
		t.Fatalf("the help does not say %q:\n%s", stated, out.String())
	}
}

// A window too short for any worker to run in it (-duration 1ns
// -warmup 0) has a limit of 0: the report gives no ratio, says why, and
// so does not warn that the ratio it does not give may be off.
func TestAReportWithoutARatioHasNoCaveatAboutTheRatio(t *testing.T) {
	r := &Report{
		Config:     ConfigReport{Policy: "shared", Resources: 4, Capacity: 1},
		Throughput: Throughput{WindowNs: 1},
	}
	r.Throughput.Limit = Limit{Bottleneck: "workers", MeanHoldNanos: int64(260 * time.Millisecond)}
	var b strings.Builder
	writeThroughput(&b, r)
	text := b.String()
	if strings.Contains(text, "the ratio can be off") || strings.Contains(text, "no limit") ||
		!strings.Contains(text, "n/a (no worker ran in the measured window)") {
		t.Errorf("report:\n%s", text)
	}
	var h bytes.Buffer
	r.Latency, r.Resources = Latencies{}, nil
	r.Timeline = []Sample{{}}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "no worker ran in the measured window") || strings.Contains(h.String(), "0.00% of the theoretical limit") {
		t.Errorf("the HTML report gives a ratio to a limit of 0")
	}
}
