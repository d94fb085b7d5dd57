package loadtest

// Report is everything a run measured. It is what -json writes, and what
// the text and HTML reports are drawn from. Durations are nanoseconds.
type Report struct {
	Pool        string       `json:"pool"`       // "crs", "mutex" or an Extension's name
	PoolTitle   string       `json:"pool_title"` // the pool, as the heading names it
	Config      ConfigReport `json:"config"`
	Environment Environment  `json:"environment"`
	ElapsedNs   int64        `json:"elapsed_ns"` // start to the last worker's end
	// Interrupted is set when the run was cut short (a signal): the
	// measured window then ends at the interrupt, and
	// Throughput.WindowNs is shorter than Config.DurationNs.
	Interrupted *Interruption `json:"interrupted,omitempty"`
	Requests    Requests      `json:"requests"`
	Throughput  Throughput    `json:"throughput"`
	Latency     Latencies     `json:"latency"`
	Resources   []ResourceUse `json:"resources"`
	Runtime     RuntimeReport `json:"runtime"`
	PoolState   PoolReport    `json:"pool_state"`
	Accounting  Accounting    `json:"accounting"`
	Timeline    []Sample      `json:"timeline"`
	Histograms  HistogramBins `json:"histograms"`
	// Baseline is the same workload on the mutex-around-a-heap pool,
	// with -compare (the naive client, in the llm scenario).
	Baseline *Report `json:"baseline,omitempty"`
	// LLM is the llm scenario's report, which is all that the scenario
	// fills in besides Pool, Config, Environment, ElapsedNs, Interrupted
	// and Accounting: WriteJSON writes it alone.
	LLM *LLMReport `json:"llm,omitempty"`
	// Tenants is the tenants scenario's report, filled in as LLM is:
	// WriteJSON writes it alone.
	Tenants *TenantsReport `json:"tenants,omitempty"`
}

// ConfigReport is the run's configuration, in the flags' terms.
type ConfigReport struct {
	Scenario       string  `json:"scenario"`
	Workers        int     `json:"workers"`
	Resources      int     `json:"resources"`
	DurationNs     int64   `json:"duration_ns"`
	WarmupNs       int64   `json:"warmup_ns"`
	Policy         string  `json:"policy"`
	Strategy       string  `json:"strategy"`
	Ordering       string  `json:"ordering"`
	API            string  `json:"api"`
	Heaps          int     `json:"heaps"`
	Capacity       int     `json:"capacity"`
	TimeoutNs      int64   `json:"timeout_ns"`
	Latency        string  `json:"latency"`
	LatencyMeanNs  int64   `json:"latency_mean_ns"`
	FailureRate    float64 `json:"failure_rate"`
	Unhealthy      int     `json:"unhealthy"`
	UnhealthyRate  float64 `json:"unhealthy_rate"`
	CancelRate     float64 `json:"cancel_rate"`
	CooldownNs     int64   `json:"cooldown_ns"`
	SuspendNs      int64   `json:"suspend_ns"`
	Eject          int     `json:"eject"` // failures in a row that eject a resource; 0: off
	EjectBaseNs    int64   `json:"eject_base_ns"`
	EjectMaxNs     int64   `json:"eject_max_ns"`
	EjectShare     float64 `json:"eject_share"`
	Events         bool    `json:"events"`
	EventQueueSize int     `json:"event_queue_size"`
	Seed           uint64  `json:"seed"`
}

// Environment is where the run ran.
type Environment struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	Race       bool   `json:"race"`
}

// Requests counts outcomes over the whole run (warm-up and drain
// included): every attempt is exactly one of Success, BackendFailures,
// AcquireFailures, AcquireTimeouts and Cancelled.
type Requests struct {
	Attempts        uint64 `json:"attempts"`
	Success         uint64 `json:"success"`
	BackendFailures uint64 `json:"backend_failures"`
	AcquireFailures uint64 `json:"acquire_failures"`
	AcquireTimeouts uint64 `json:"acquire_timeouts"`
	// Cancelled = CancelledWaiting + CancelledBackend + StoppedWaiting.
	Cancelled        uint64 `json:"cancelled"`
	CancelledWaiting uint64 `json:"cancelled_waiting"` // by the client, while waiting
	CancelledBackend uint64 `json:"cancelled_backend"` // by the client, during the call
	StoppedWaiting   uint64 `json:"stopped_waiting"`   // waiting when the run or burst ended
	Acquisitions     uint64 `json:"acquisitions"`
	Releases         uint64 `json:"releases"`
	ReleaseFailures  uint64 `json:"release_failures"`
	PeakInFlight     int64  `json:"peak_in_flight"` // requests in progress at once
	PeakHolding      int64  `json:"peak_holding"`   // resources held at once (holds)
	// CooldownViolations counts acquisitions less than the cooldown after
	// the resource's previous release; checked only with one exclusive
	// slot per resource (CooldownChecked).
	CooldownChecked    bool   `json:"cooldown_checked"`
	CooldownViolations uint64 `json:"cooldown_violations"`
	FirstAcquireError  string `json:"first_acquire_error,omitempty"`
	FirstReleaseError  string `json:"first_release_error,omitempty"`
}

// Throughput is measured over the window only: backend calls completed
// (successes and failures) per second.
type Throughput struct {
	WindowNs  int64   `json:"window_ns"`
	Completed uint64  `json:"completed"`
	PerSecond float64 `json:"per_second"`
	Limit     Limit   `json:"limit"`
	// Ratio is PerSecond / Limit.PerSecond.
	Ratio float64 `json:"ratio"`
	// AsRun is the limit recomputed with the measured mean of the backend
	// calls completed in the window instead of the distribution's: the
	// measured mean includes how late the runtime (and, on a busy machine,
	// the OS) woke each sleeping worker. RatioAsRun is then the share of
	// throughput that the pool and the harness kept, wake-up lag aside.
	AsRun      Limit   `json:"as_run"`
	RatioAsRun float64 `json:"ratio_as_run"`
}

// Latencies are the request's parts. Acquire times the acquire call alone;
// Backend the simulated call as the worker measured it; Total the attempt
// from start to the end of its release; WakeLag the backend call's
// measured minus its drawn duration: how late the sleeping goroutine was
// woken and run, the Go runtime's share.
type Latencies struct {
	Acquire LatencySummary `json:"acquire"`
	Backend LatencySummary `json:"backend"`
	Total   LatencySummary `json:"total"`
	WakeLag LatencySummary `json:"wake_lag"`
}

// LatencySummary summarises one latency histogram.
type LatencySummary struct {
	Count uint64 `json:"count"`
	Mean  int64  `json:"mean_ns"`
	Min   int64  `json:"min_ns"`
	P50   int64  `json:"p50_ns"`
	P90   int64  `json:"p90_ns"`
	P95   int64  `json:"p95_ns"`
	P99   int64  `json:"p99_ns"`
	P999  int64  `json:"p999_ns"`
	Max   int64  `json:"max_ns"`
	// Over1ms counts values above 1 ms (to the histogram's precision).
	Over1ms uint64 `json:"over_1ms"`
}

// ResourceUse is one resource's share of the work.
type ResourceUse struct {
	Name         string  `json:"name"`
	Acquisitions uint64  `json:"acquisitions"`
	Failures     uint64  `json:"backend_failures"`
	Share        float64 `json:"share"` // of all acquisitions
	// MeanHolders is the time-averaged number of holders; Utilisation is
	// that over the resource's capacity (Exclusive policy; under Shared a
	// resource has no capacity, and it is the share instead).
	MeanHolders float64 `json:"mean_holders"`
	Utilisation float64 `json:"utilisation"`
	PeakHolders int64   `json:"peak_holders"`
}

// PoolReport is the pool's own view once the run is over (after the
// rests still running were ended), and the health calls the harness made.
type PoolReport struct {
	Holders     int `json:"holders"`
	Waiters     int `json:"waiters"`
	Active      int `json:"active"`
	Total       int `json:"total"`
	Draining    int `json:"draining"`
	Excluded    int `json:"excluded"`
	Suspended   int `json:"suspended"`
	Ejected     int `json:"ejected"`
	RateLimited int `json:"rate_limited"`
	// CancelledWaits is absent if the pool does not count them.
	CancelledWaits *uint64       `json:"cancelled_waits,omitempty"`
	DroppedEvents  uint64        `json:"dropped_events"`
	Events         *EventCounts  `json:"events,omitempty"`
	Health         *HealthTotals `json:"health,omitempty"`
	Calls          HealthCalls   `json:"health_calls"`
}

// HistogramBins are the latency distributions, coarsened for charts.
type HistogramBins struct {
	Acquire []Bin `json:"acquire"`
	Total   []Bin `json:"total"`
}

// Interruption says what cut a run short, and when.
type Interruption struct {
	Cause string `json:"cause"` // the signal (SIGINT, SIGTERM), or the context's cause
	AtNs  int64  `json:"at_ns"` // since the start of the run
	// During, if not empty, is the setup the interrupt cut short, before
	// the run's clock started: "starting the workers: 999 of 4,096
	// started".
	During string `json:"during,omitempty"`
}
