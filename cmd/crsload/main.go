// Command crsload is the load-test harness of the crs scheduler: N
// workers compete for R resources, each request acquiring one, making a
// simulated backend call and releasing it, and the report sets the
// throughput against the workload's theoretical limit, gives latency
// percentiles, per-resource use and an accounting check.
//
//	go run ./cmd/crsload            # the default run: about 12 s
//	go run ./cmd/crsload -h         # every flag, on stdout
//	go run ./cmd/crsload -json - | jq .throughput
//
// The report goes to stdout; the progress and status lines go to stderr.
// -json and -html files are opened before the run, and - writes that
// report to stdout, the text report then going to stderr. A bad flag is
// one line on stderr, exit status 2. The run exits 1 if its accounting
// fails or a report cannot be written. SIGINT or SIGTERM ends the run
// early, in any phase: the report covers the window that ran and says so
// (a signal while the workers start stops starting them; one while the
// resources are added stops that, and one line says nothing ran), and
// the exit status is 130 or 143; a second signal ends the process at
// once.
//
// -scenario llm calls an OpenAI-compatible provider over HTTP instead,
// with API keys under requests and tokens per minute: the mock provider
// of harness/mockprovider, started in-process, or -provider URL. It
// reports the 429s, the calls served, the share of the budget used and
// the latency added, for crs and, with -compare, for a naive round
// robin (docs/crsload.md).
//
// -scenario tenants shares one exclusive key between a heavy tenant, a
// light one and interactive callers at a higher priority, with the
// scheduler's tenants and priorities and then first come, first served,
// and reports each tenant's share against its weight, Jain's fairness
// index and the interactive wait p50/p99 side by side.
//
// The harness itself lives in harness/loadtest. The same command on a
// pool kept in Redis, shared by several processes, is the redispool
// module's crsload-redis: cd redispool && go run ./cmd/crsload-redis
// -redis ADDR.
package main

import (
	"context"
	"os"

	"github.com/crsched/crs/harness/loadtest"
)

func main() {
	// SIGINT or SIGTERM ends the run early; the report covers what ran and
	// says so, and the exit status is 130 or 143. A second signal ends
	// the process at once.
	ctx, stop := loadtest.NotifyContext(context.Background())
	code := loadtest.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
