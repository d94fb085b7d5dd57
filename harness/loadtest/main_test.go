package loadtest

import (
	"testing"
	"time"

	"github.com/crsched/crs/internal/leakcheck"
)

// The runs below leave nothing behind: no worker, sampler, rest timer or
// scheduler goroutine outlives them.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// quick is a scenario shrunk to a fraction of a second: few workers and
// millisecond latencies. Tests assert the accounting and the shape of the
// report, never a speed, so they pass however slow the machine is.
func quick(scenario string) Config {
	c := Default()
	c.Scenario = scenario
	c.Workers = 40
	c.Resources = 3
	c.Duration = 200 * time.Millisecond
	c.Warmup = 20 * time.Millisecond
	c.Latency = Latency{Kind: "uniform", Min: time.Millisecond, Max: 4 * time.Millisecond}
	c.Timeout = 50 * time.Millisecond
	c.Events = true // so that every run also checks the scheduler's events
	for name, value := range ScenarioDefaults(scenario) {
		switch name {
		case "policy":
			if value == "exclusive" {
				c.Policy = 1
			}
		case "failure-rate":
			c.FailureRate = 0.1
		case "cooldown":
			c.Cooldown = 2 * time.Millisecond
		case "eject":
			// Ejection needs leases (see variant.apply); short ones, so
			// that a resource comes back in the run.
			c.EjectBase, c.EjectMax = 5*time.Millisecond, 20*time.Millisecond
		}
	}
	return c
}

// variant is a pool under test: the scheduler through either API, or the
// baseline.
type variant struct{ pool, api string }

var variants = []variant{{"crs", "acquire"}, {"crs", "lease"}, {"mutex", "acquire"}}

func (v variant) String() string {
	if v.pool == "mutex" {
		return v.pool
	}
	return v.pool + "-" + v.api
}

func (v variant) apply(c Config) Config {
	c.Pool, c.API = v.pool, v.api
	if c.Scenario == Failure && c.API == "lease" {
		c.Eject = 3 // the scenario's ejection, where failures reach the pool
	}
	return c
}
