package loadtest

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/crsched/crs/config"
)

// Scenario names.
const (
	Normal   = "normal"
	Burst    = "burst"
	Failure  = "failure"
	Cooldown = "cooldown"
)

// Scenarios lists the scenarios of a simulated backend, in the order -h
// shows them; the llm scenario (LLM, llm.go) calls a provider over HTTP
// instead, and reads only some of Config.
var Scenarios = []string{Normal, Burst, Failure, Cooldown}

// Config describes one load test. Default returns the default run; the
// flags in flags.go fill it in.
type Config struct {
	Scenario  string
	Workers   int // concurrent workers; in a burst, the peak
	Resources int
	// Duration is the measured window; Warmup runs before it and is not
	// counted in the throughput, so that the start (every worker beginning
	// at once) does not bias it.
	Duration time.Duration
	Warmup   time.Duration
	Policy   config.AcquirePolicy
	Strategy string // adaptive, local, round_robin or weighted
	Ordering config.Ordering
	// API is how the harness acquires from the scheduler: "acquire"
	// (AcquireContext, and Release(id) under Exclusive) or "lease" (Lease
	// and Lease.Release, under either policy).
	API      string
	Heaps    int // scheduler shards; 0 means one per resource
	Capacity int // holders per resource under the Exclusive policy
	// Timeout bounds each request's wait for a resource.
	Timeout time.Duration
	Latency Latency
	// FailureRate is the share of backend calls that fail; CancelRate the
	// share of requests their client abandons at a random moment before
	// the backend call would end.
	FailureRate float64
	CancelRate  float64
	// Unhealthy resources (the first ones: backend-01, ...) fail at
	// UnhealthyRate instead of FailureRate: what ejection is for.
	Unhealthy     int
	UnhealthyRate float64
	// Cooldown rests each resource for this long after every release
	// (the scheduler's Config.ReleaseCooldown). Suspend rests a resource
	// after a backend failure (Scheduler.Suspend, before the release).
	Cooldown time.Duration
	Suspend  time.Duration
	// Eject is the scheduler's Config.Ejection: Eject failures in a row
	// (reported with Lease.Fail, so -api lease only) eject a resource, its
	// n-th ejection lasting n x EjectBase, at most EjectMax, with at most
	// EjectShare of the resources ejected at once. 0 turns it off.
	Eject      int
	EjectBase  time.Duration
	EjectMax   time.Duration
	EjectShare float64
	// Events registers an events observer (extensions/metrics) whose
	// counts the accounting checks against the harness's own. Events are
	// dropped when the scheduler's queue is full; EventQueueSize is large
	// enough for a few seconds of events at the default run's rate, so
	// that a stalled dispatcher drops nothing, and if anything is dropped
	// the check is skipped and says so. The observer costs each acquire a
	// channel send: a few microseconds at p99 on a two-core machine.
	Events         bool
	EventQueueSize int
	Seed           uint64
	// Pool selects the pool under test: "crs", "mutex" (the baseline of
	// -compare), or the Name of an Extension; in the llm scenario, the
	// client: "crs" or "naive" (the baseline of -compare).
	Pool string
	// LLM is the llm scenario's own settings.
	LLM LLMConfig
	// Tenants is the tenants scenario's own settings.
	Tenants TenantsConfig
}

// Default is the default run: the seed's 10,000 workers on 4 shared
// resources with the adaptive strategy, shortened to a 10 s window so
// that it finishes in about 12 s.
func Default() Config {
	return Config{
		Scenario:       Normal,
		Workers:        10000,
		Resources:      4,
		Duration:       10 * time.Second,
		Warmup:         time.Second,
		Policy:         config.Shared,
		Strategy:       "adaptive",
		API:            "acquire",
		Capacity:       1,
		Events:         true,
		Timeout:        time.Second,
		Latency:        DefaultLatency,
		FailureRate:    0.01,
		UnhealthyRate:  0.5,
		EjectBase:      time.Second,
		EjectMax:       10 * time.Second,
		EjectShare:     0.5,
		EventQueueSize: 1 << 18,
		Seed:           1,
		Pool:           "crs",
		LLM:            DefaultLLM,
		Tenants:        DefaultTenants,
	}
}

// Ejection is the pool's Config.Ejection from Eject and its tuning; the
// zero value (off) when Eject is 0.
func (c Config) Ejection() config.Ejection {
	if c.Eject <= 0 {
		return config.Ejection{}
	}
	return config.Ejection{ConsecutiveFailures: c.Eject, BaseTime: c.EjectBase, MaxTime: c.EjectMax, MaxEjectedShare: c.EjectShare}
}

// ScenarioDefaults are the settings a scenario changes from Default,
// applied to the flags the user did not set. A burst peaks at 5,000
// workers and failure uses 1,000, as in the seed's runs. Cooldown needs
// exclusive resources to mean anything, and few workers: resting slots
// serve only a handful of requests a second, and the seed's 1,000
// workers spent nearly every request timing out in the queue, so the
// run showed overload rather than cooldowns. Twice as many workers as
// resources keeps every resource busy, with a short queue. The failure
// scenario also has one unhealthy resource, failing half its calls, and
// ejects a resource after 5 failures in a row where failures reach the
// pool (-api lease; ParseFlags drops the ejection otherwise): random 10%
// failures hardly ever make 5 in a row, the unhealthy resource soon does.
// The tenants scenario shares one key, scarce, for 5 s a run.
// The llm scenario runs the 50 workers for 20 s, long enough for
// the buckets' refill to matter beside their initial fill and short
// enough to wait for, with no warm-up: the start, every bucket full and
// every worker calling at once, is part of what a client must handle.
func ScenarioDefaults(scenario string) map[string]string {
	switch scenario {
	case Burst:
		return map[string]string{"workers": "5000"}
	case Failure:
		return map[string]string{"workers": "1000", "failure-rate": "0.1", "unhealthy": "1", "eject": "5"}
	case Cooldown:
		return map[string]string{"workers": "8", "policy": "exclusive", "cooldown": "100ms"}
	case LLM:
		return map[string]string{"workers": "50", "duration": "20s", "warmup": "0s", "eject": "3", "eject-base": "2s"}
	case Tenants:
		return map[string]string{"resources": "1", "duration": "5s"}
	}
	return nil
}

// FailureShare is the share of backend calls expected to fail when calls
// spread evenly over the resources: the unhealthy ones fail at
// UnhealthyRate, the others at FailureRate. With one unhealthy resource
// of four this is well above FailureRate, which the help must not give
// as the scenario's share.
func (c Config) FailureShare() float64 {
	if c.Resources < 1 {
		return c.FailureRate
	}
	u, n := float64(min(c.Unhealthy, c.Resources)), float64(c.Resources)
	return (u*c.UnhealthyRate + (n-u)*c.FailureRate) / n
}

// HeapCount is the scheduler's shard count for this run.
func (c Config) HeapCount() int {
	if c.Heaps > 0 {
		return c.Heaps
	}
	return min(c.Resources, config.MaxHeapCount)
}

// Validate reports the first setting that cannot run on the built-in
// pools.
func (c Config) Validate() error { return c.validate(nil) }

// validate is Validate, also accepting the pool of ext.
func (c Config) validate(ext *Extension) error {
	pools := []string{"crs", "mutex"}
	if ext != nil {
		pools = append(pools, ext.Name)
	}
	switch c.Scenario {
	case LLM:
		return c.validateLLM(ext)
	case Tenants:
		return c.validateTenants(ext)
	}
	switch {
	case !known(c.Scenario, Scenarios):
		return fmt.Errorf("scenario %q: want one of %v", c.Scenario, append(Scenarios[:len(Scenarios):len(Scenarios)], LLM, Tenants))
	case c.Workers < 1:
		return errors.New("workers: want at least 1")
	case c.Resources < 1:
		return errors.New("resources: want at least 1")
	case c.Duration <= 0:
		return errors.New("duration: want > 0")
	case c.Warmup < 0:
		return errors.New("warmup: want >= 0")
	case c.Duration > math.MaxInt64-c.Warmup:
		return errors.New("duration: warm-up plus window too long for the clock")
	case c.Heaps < 0 || c.Heaps > config.MaxHeapCount:
		return fmt.Errorf("heaps: want 0 to %d", config.MaxHeapCount)
	case c.Capacity < 1:
		return errors.New("capacity: want at least 1")
	case c.Timeout <= 0:
		return errors.New("timeout: want > 0")
	case !isShare(c.FailureRate):
		return errors.New("failure-rate: want 0 to 1")
	case c.Unhealthy < 0 || c.Unhealthy > c.Resources:
		return errors.New("unhealthy: want 0 to the number of resources")
	case !isShare(c.UnhealthyRate):
		return errors.New("unhealthy-rate: want 0 to 1")
	case !isShare(c.CancelRate):
		return errors.New("cancel-rate: want 0 to 1")
	case c.Cooldown < 0 || c.Suspend < 0:
		return errors.New("cooldown, suspend: want >= 0")
	case c.Eject < 0:
		return errors.New("eject: want >= 0")
	case c.Eject > 0 && (c.EjectBase <= 0 || c.EjectMax < 0):
		return errors.New("eject-base: want > 0; eject-max: want >= 0")
	case !isShare(c.EjectShare):
		return errors.New("eject-share: want 0 to 1")
	case c.Eject > 0 && c.API != "lease" && (c.Pool == "crs" || c.Pool == "mutex"):
		return errors.New("eject: only Lease.Fail reports a failure to the scheduler: use -api lease")
	case c.Cooldown > 0 && c.Pool == "crs" && c.Policy == config.Shared && c.API == "acquire":
		return errors.New("cooldown: a shared acquisition without a lease holds nothing, so no release starts one: use -api lease or -policy exclusive")
	case c.EventQueueSize < 0:
		return errors.New("event-queue: want >= 0")
	case !known(c.Strategy, strategyNames):
		return fmt.Errorf("strategy %q: want one of %v", c.Strategy, strategyNames)
	case !known(c.API, []string{"acquire", "lease"}):
		return fmt.Errorf("api %q: want acquire or lease", c.API)
	case c.Ordering != config.ShardOrder && c.Ordering != config.GlobalOrder:
		return errors.New("ordering: want shard or global")
	case !known(c.Pool, pools):
		return fmt.Errorf("pool %q: want one of %v", c.Pool, pools)
	case c.Latency.Kind == "":
		return errors.New("latency: not set")
	}
	return nil
}

// validateLLM checks what the llm scenario reads; ext's pool is one more
// client if it has one.
func (c Config) validateLLM(ext *Extension) error {
	switch {
	case c.Workers < 1:
		return errors.New("workers: want at least 1")
	case c.Resources < 1:
		return errors.New("resources: want at least 1")
	case c.Duration <= 0:
		return errors.New("duration: want > 0")
	case c.Eject < 0:
		return errors.New("eject: want >= 0")
	case c.Eject > 0 && (c.EjectBase <= 0 || c.EjectMax < 0):
		return errors.New("eject-base: want > 0; eject-max: want >= 0")
	case !isShare(c.EjectShare):
		return errors.New("eject-share: want 0 to 1")
	}
	pool := c.Pool
	if ext != nil && ext.LLM != nil && pool == ext.Name {
		pool = "crs" // a client of the same kind, on the extension's pool
	}
	return c.LLM.validate(pool)
}

func known(s string, list []string) bool {
	for _, k := range list {
		if s == k {
			return true
		}
	}
	return false
}
