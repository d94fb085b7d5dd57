package waitload_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/bench/waitload"
)

// TestEveryPool runs a small workload through every pool and checks only
// what cannot depend on the machine's speed: each pool served something,
// without an error, never handed a resource to two holders at once, and
// left no goroutine behind. Speed is measured by the program, never
// asserted here.
func TestEveryPool(t *testing.T) {
	cfg := waitload.DefaultConfig()
	cfg.Workers = 50
	cfg.Resources = 2
	cfg.Hold = 100 * time.Microsecond
	cfg.Warmup = 20 * time.Millisecond
	cfg.Duration = 200 * time.Millisecond
	cfg.SettleTimeout = 10 * time.Second // generous: -race on a loaded machine

	for _, name := range waitload.Pools() {
		t.Run(name, func(t *testing.T) {
			r, err := waitload.Run(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Err != "" {
				t.Errorf("run failed: %s", r.Err)
			}
			if r.Violations != 0 {
				t.Errorf("%d grants of a resource that was already held", r.Violations)
			}
			if r.Served <= 0 {
				t.Errorf("served %d requests, want some", r.Served)
			}
			if r.GoroutinesLeft != 0 {
				t.Errorf("%d goroutines left after shutdown", r.GoroutinesLeft)
			}
			if r.Pool != name || r.Workers != cfg.Workers || r.Resources != cfg.Resources {
				t.Errorf("result describes %s/%d/%d, want %s/%d/%d", r.Pool, r.Workers, r.Resources, name, cfg.Workers, cfg.Resources)
			}
		})
	}
}

func TestTableHasARowPerPool(t *testing.T) {
	results := []waitload.Result{
		{Pool: "crs", Served: 10, CPUMeasured: true, CPUPerRequest: 30 * time.Microsecond},
		{Pool: waitload.Baseline, Served: 10, CPUMeasured: true, CPUPerRequest: 20 * time.Microsecond},
	}
	var b strings.Builder
	if err := waitload.WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 { // header, rule, two rows
		t.Fatalf("table has %d lines, want 4:\n%s", len(lines), b.String())
	}
	if !strings.Contains(lines[2], "| 1.50 ") {
		t.Errorf("crs row lacks its CPU ratio 1.50 to %s: %s", waitload.Baseline, lines[2])
	}
	if got := waitload.CPURatio(results[0], results); got != 1.5 {
		t.Errorf("CPURatio = %v, want 1.5", got)
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	if _, err := waitload.Run("no-such-pool", waitload.DefaultConfig()); err == nil {
		t.Error("Run accepted an unknown pool")
	}
	cfg := waitload.DefaultConfig()
	cfg.Resources = 0
	if _, err := waitload.Run("channel", cfg); err == nil {
		t.Error("Run accepted 0 resources")
	}
}
