package waitload

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is one workload. The zero value is not usable; start from
// DefaultConfig, which is the load of the issue this package was written
// for.
type Config struct {
	// Workers is the number of goroutines competing for the resources.
	Workers int
	// Resources is the number of exclusive resources in the pool.
	Resources int
	// Hold is how long each request sleeps while holding its resource.
	// The real duration is longer (timer granularity) and is measured, not
	// assumed.
	Hold time.Duration
	// Warmup runs the load before the measurement starts, so that the
	// one-off cost of waking every worker and queueing it for the first
	// time is not charged to the steady state. It may be 0.
	Warmup time.Duration
	// Duration is the length of the measured window.
	Duration time.Duration
	// HeapCount is the crs scheduler's shard count (ignored by the
	// others).
	HeapCount int
	// CPUProfile, when set, receives a CPU profile of the measured window
	// (pprof format).
	CPUProfile io.Writer
	// SettleTimeout bounds the wait for the pool's goroutines and the
	// workers to exit after the run before they are counted as left
	// behind.
	SettleTimeout time.Duration
}

// DefaultConfig is the workload: 10,000 workers, 4 resources, a
// 1 ms hold, 5 s measured.
func DefaultConfig() Config {
	return Config{
		Workers:       10_000,
		Resources:     4,
		Hold:          time.Millisecond,
		Warmup:        500 * time.Millisecond,
		Duration:      5 * time.Second,
		HeapCount:     1,
		SettleTimeout: 5 * time.Second,
	}
}

func (c Config) validate() error {
	var errs []error
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d: want at least 1", c.Workers))
	}
	if c.Resources < 1 {
		errs = append(errs, fmt.Errorf("resources %d: want at least 1", c.Resources))
	}
	if c.Hold < 0 {
		errs = append(errs, fmt.Errorf("hold %v: want >= 0", c.Hold))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup %v: want >= 0", c.Warmup))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: want > 0", c.Duration))
	}
	if c.HeapCount < 0 {
		errs = append(errs, fmt.Errorf("heap count %d: want >= 0", c.HeapCount))
	}
	if c.SettleTimeout < 0 {
		errs = append(errs, fmt.Errorf("settle timeout %v: want >= 0", c.SettleTimeout))
	}
	return errors.Join(errs...)
}
