package loadtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Latency is the distribution of the simulated backend call's duration.
// It is a value, parsed from a flag such as "uniform:20ms-500ms".
type Latency struct {
	Kind     string        // "uniform", "fixed" or "exp"
	Min, Max time.Duration // uniform: the bounds; fixed: both the value
	MeanExp  time.Duration // exp: the mean
}

// DefaultLatency reproduces the seed's backend: uniform between 20 and
// 500 ms has p50 260, p95 476 and p99 495 ms, the figures it reported.
var DefaultLatency = Latency{Kind: "uniform", Min: 20 * time.Millisecond, Max: 500 * time.Millisecond}

// ParseLatency reads "uniform:MIN-MAX", "fixed:D" or "exp:MEAN", with Go
// durations ("uniform:20ms-500ms", "fixed:1ms", "exp:100ms").
func ParseLatency(s string) (Latency, error) {
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		return Latency{}, fmt.Errorf("latency %q: want uniform:MIN-MAX, fixed:D or exp:MEAN", s)
	}
	switch kind {
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "-")
		if !ok {
			return Latency{}, fmt.Errorf("latency %q: want uniform:MIN-MAX", s)
		}
		a, err1 := time.ParseDuration(lo)
		b, err2 := time.ParseDuration(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return Latency{}, fmt.Errorf("latency %q: want 0 <= MIN <= MAX", s)
		}
		return Latency{Kind: kind, Min: a, Max: b}, nil
	case "fixed":
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return Latency{}, fmt.Errorf("latency %q: want a duration >= 0", s)
		}
		return Latency{Kind: kind, Min: d, Max: d}, nil
	case "exp":
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return Latency{}, fmt.Errorf("latency %q: want a mean > 0", s)
		}
		return Latency{Kind: kind, MeanExp: d}, nil
	}
	return Latency{}, fmt.Errorf("latency %q: unknown kind %q (uniform, fixed, exp)", s, kind)
}

// String is the flag form, which ParseLatency reads back.
func (l Latency) String() string {
	switch l.Kind {
	case "uniform":
		return fmt.Sprintf("uniform:%v-%v", l.Min, l.Max)
	case "fixed":
		return fmt.Sprintf("fixed:%v", l.Min)
	case "exp":
		return fmt.Sprintf("exp:%v", l.MeanExp)
	}
	return "invalid"
}

// Mean is the distribution's exact mean, from which the theoretical
// throughput limit is computed (not the measured mean, which includes the
// overheads the limit is there to expose).
func (l Latency) Mean() time.Duration {
	if l.Kind == "exp" {
		return l.MeanExp
	}
	return (l.Min + l.Max) / 2
}

// Draw returns one latency, using the caller's generator: each worker has
// its own, so draws take no lock and a seed reproduces each worker's
// sequence.
func (l Latency) Draw(r *rand.Rand) time.Duration {
	switch l.Kind {
	case "uniform":
		if l.Max == l.Min {
			return l.Min
		}
		return l.Min + time.Duration(r.Int64N(int64(l.Max-l.Min)+1))
	case "exp":
		// Capped at 100 means so that one draw cannot stall a short run.
		return time.Duration(math.Min(r.ExpFloat64(), 100) * float64(l.MeanExp))
	}
	return l.Min
}
