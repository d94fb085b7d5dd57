package loadtest

import (
	"math"
	"os"
	"runtime/metrics"
	"strings"
	"time"
)

// runtimeReading is what the Go runtime says about itself at one moment:
// how long runnable goroutines waited for a processor, how often and how
// long the world stopped for GC, and how much CPU the process used. The
// difference of two readings explains the time the harness measures but
// the pool does not spend.
type runtimeReading struct {
	wall    time.Time
	usage   usage
	usageOK bool
	load    string // /proc/loadavg's 1-minute figure, where there is one
	gcs     uint64
	allocs  uint64                    // heap allocations so far (objects)
	bytes   uint64                    // heap allocations so far (bytes)
	latency *metrics.Float64Histogram // /sched/latencies
	pauses  *metrics.Float64Histogram // /sched/pauses/total/gc
}

const (
	metricSchedLatency = "/sched/latencies:seconds"
	metricGCPauses     = "/sched/pauses/total/gc:seconds"
	metricGCCycles     = "/gc/cycles/total:gc-cycles"
	metricAllocObjects = "/gc/heap/allocs:objects"
	metricAllocBytes   = "/gc/heap/allocs:bytes"
)

func readRuntime() runtimeReading {
	s := []metrics.Sample{{Name: metricSchedLatency}, {Name: metricGCPauses}, {Name: metricGCCycles},
		{Name: metricAllocObjects}, {Name: metricAllocBytes}}
	metrics.Read(s)
	r := runtimeReading{wall: time.Now()}
	r.usage, r.usageOK = processUsage()
	r.load = loadAverage()
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		r.latency = s[0].Value.Float64Histogram()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		r.pauses = s[1].Value.Float64Histogram()
	}
	if s[2].Value.Kind() == metrics.KindUint64 {
		r.gcs = s[2].Value.Uint64()
	}
	if s[3].Value.Kind() == metrics.KindUint64 && s[4].Value.Kind() == metrics.KindUint64 {
		r.allocs, r.bytes = s[3].Value.Uint64(), s[4].Value.Uint64()
	}
	return r
}

// RuntimeReport is the runtime's side of a run.
type RuntimeReport struct {
	// SchedLatency is how long goroutines waited in the run queue before
	// running (from runtime/metrics, all goroutines, during the run).
	SchedLatency HistSummary `json:"sched_latency"`
	GCCycles     uint64      `json:"gc_cycles"`
	// HeapAllocs and HeapAllocBytes are what the process allocated
	// during the run, pool and harness together: the GC's work.
	HeapAllocs     uint64 `json:"heap_allocs"`
	HeapAllocBytes uint64 `json:"heap_alloc_bytes"`
	// GCPauses are the stop-the-world pauses for GC during the run.
	GCPauses HistSummary `json:"gc_pauses"`
	// CPU is the process's CPU time (user + system) during the run, and
	// CPUShare that time over GOMAXPROCS x wall time (0 if unmeasured).
	CPUNanos int64   `json:"cpu_ns"`
	CPUShare float64 `json:"cpu_share"`
	// Preempted counts the times the operating system took a CPU from one
	// of the process's threads during the run: other processes' share of
	// a busy machine, which the Go runtime cannot hide.
	Preempted int64 `json:"os_preemptions"`
	// LoadAverage is the machine's 1-minute load average at the start and
	// the end of the run (Linux only; empty elsewhere).
	LoadAverage [2]string `json:"load_average"`
	// Stalls are the sampler's late ticks: a tick more than one interval
	// late means the sampler goroutine, and very likely the whole process,
	// did not run for that long. StallNs is their lateness in all.
	Stalls        int   `json:"stalls"`
	StallNs       int64 `json:"stall_ns"`
	LongestGapNs  int64 `json:"longest_gap_ns"`
	SampleEveryNs int64 `json:"sample_every_ns"`
}

// stalls reads the sampler's ticks for the time the process did not run.
func (rt *RuntimeReport) stalls(samples []Sample, every time.Duration) {
	rt.SampleEveryNs = int64(every)
	for i := 1; i < len(samples); i++ {
		gap := int64((samples[i].T - samples[i-1].T) * 1e9)
		rt.LongestGapNs = max(rt.LongestGapNs, gap)
		if late := gap - int64(every); late > int64(every) {
			rt.Stalls++
			rt.StallNs += late
		}
	}
}

// usage is the process's resource usage so far.
type usage struct {
	cpu       int64 // ns, user + system
	preempted int64 // involuntary context switches
}

// loadAverage reads the 1-minute load average, on Linux.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(string(b), " ")
	return first
}

// HistSummary summarises a runtime histogram. Its buckets are coarse (the
// runtime's), so the figures are bucket upper bounds: an upper estimate.
type HistSummary struct {
	Count   uint64 `json:"count"`
	P50     int64  `json:"p50_ns"`
	P99     int64  `json:"p99_ns"`
	P999    int64  `json:"p999_ns"`
	Max     int64  `json:"max_ns"`
	TotalNs int64  `json:"total_ns"` // sum of bucket midpoints: an estimate
}

func (r runtimeReading) delta(end runtimeReading, procs int) RuntimeReport {
	rep := RuntimeReport{
		SchedLatency:   histDelta(r.latency, end.latency),
		GCCycles:       end.gcs - r.gcs,
		HeapAllocs:     end.allocs - r.allocs,
		HeapAllocBytes: end.bytes - r.bytes,
		GCPauses:       histDelta(r.pauses, end.pauses),
	}
	rep.LoadAverage = [2]string{r.load, end.load}
	if r.usageOK && end.usageOK {
		rep.CPUNanos = end.usage.cpu - r.usage.cpu
		rep.Preempted = end.usage.preempted - r.usage.preempted
		if wall := end.wall.Sub(r.wall); wall > 0 && procs > 0 {
			rep.CPUShare = float64(rep.CPUNanos) / (float64(wall) * float64(procs))
		}
	}
	return rep
}

func histDelta(a, b *metrics.Float64Histogram) HistSummary {
	var s HistSummary
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return s
	}
	counts := make([]uint64, len(b.Counts))
	for i := range counts {
		counts[i] = b.Counts[i] - a.Counts[i]
		s.Count += counts[i]
	}
	if s.Count == 0 {
		return s
	}
	// Bucket i spans [Buckets[i], Buckets[i+1]); report its upper bound,
	// except for the unbounded last one, where the lower bound is all we
	// know.
	upper := func(i int) int64 {
		hi := b.Buckets[i+1]
		if math.IsInf(hi, 1) {
			hi = b.Buckets[i]
		}
		return int64(hi * 1e9)
	}
	at := func(q float64) int64 {
		rank := uint64(math.Ceil(q * float64(s.Count)))
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= rank && c > 0 {
				return upper(i)
			}
		}
		return 0
	}
	s.P50, s.P99, s.P999 = at(0.5), at(0.99), at(0.999)
	var total float64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		s.Max = upper(i)
		lo, hi := b.Buckets[i], b.Buckets[i+1]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		if math.IsInf(hi, 1) {
			hi = lo
		}
		total += float64(c) * (lo + hi) / 2
	}
	s.TotalNs = int64(total * 1e9)
	return s
}
