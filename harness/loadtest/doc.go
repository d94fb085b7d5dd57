// Package loadtest is the engine of cmd/crsload, the load-test harness of
// the crs scheduler.
//
// It is program code for the repository's commands (cmd/crsload and the
// redispool module's cmd/crsload-redis) and their tests, not a library
// API: it may change in any release.
//
// A run starts N workers (goroutines) that compete for R resources through
// a pool: the crs scheduler, a mutex-around-a-heap baseline for -compare,
// or a pool another command plugs in with an Extension (MainWith): the
// redispool module's cmd/crsload-redis adds a pool kept in Redis, which
// this module, free of third-party dependencies, cannot import. Each
// worker does requests back to back: acquire a resource
// (waiting at most a timeout), a simulated backend call whose latency is
// drawn from a distribution and which may fail or be abandoned by its
// client, and release. Every outcome is counted once, in lock-free
// counters and log-linear histograms, so that ten thousand workers
// measure the pool rather than the harness.
//
// The files, one concern each:
//
//	config.go, flags.go, cli.go   what to run, from the command line
//	memory.go                     the memory a run needs, and what is free
//	engine.go, worker.go          the run: cohorts of workers, one request
//	setup.go                      a pool's setup, in chunks a signal stops
//	reqctx.go                     a request's timeout, free until waited on
//	pool.go                       what a pool must offer, and Extension
//	pool_crs.go, health_crs.go    the scheduler, and its health features
//	pool_mutex.go, timers.go      the baseline, and timed rest endings
//	latency.go, histogram.go      what is drawn, and how latency is kept
//	counters.go, timeline.go      what is counted, and sampled over time
//	runtime.go, cpu_*.go          what the Go runtime and the OS did
//	limit.go, accounting.go       the yardstick, and the end-of-run check
//	report.go, summary.go         the Report, and how a run becomes one
//	text.go, compare.go, json.go  reports for a reader or a program
//	html.go, charts.go, svg.go    the self-contained HTML report
//	progress.go, format.go        the live status line, number formats
//
// The llm scenario is a run of its own: workers call an OpenAI-compatible
// provider over HTTP, through a client that picks an API key per call.
//
//	llm.go                        its settings, workload and budgets
//	llm_run.go, llm_http.go       the run, and one call over HTTP
//	llm_client.go, llm_crs.go     LLMClient, Feedback and the naive client; the scheduler's
//	llm_report.go                 its report, text and side by side
//
// The tenants scenario is another: tenants and an interactive priority
// share scarce keys, with the scheduler's tenants and priorities and
// then first come, first served.
//
//	tenants.go                    its settings, flags and TenantsPool
//	tenants_run.go, tenants_crs.go the run, and the scheduler's pool
//	tenants_report.go             its report, both runs side by side
package loadtest
