// Command server runs a simulated workload against a crs scheduler and
// serves the scheduler's metrics for Prometheus:
//
//	go run ./examples/server                 # http://127.0.0.1:9464/metrics, 30 s
//	go run ./examples/server -duration 10m   # long enough to watch a dashboard
//
// Workers call a pool of upstreams through Lease and AcquireContext, more
// workers than the upstreams have slots, so callers wait, some give up,
// and now and then a lease is forgotten and reclaimed at its deadline. An
// operator takes one upstream out for maintenance at a time. The program
// stops by itself after -duration, or on SIGINT (Ctrl-C) or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/crsched/crs/config"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks a flag value the program refuses.
var errUsage = errors.New("invalid flag")

type options struct {
	addr        string
	duration    time.Duration
	shards      int
	upstreams   int
	workers     int
	maintenance time.Duration
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:9464", "loopback `address` to serve /metrics on (port 0: any free port)")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "stop by itself after this long")
	fs.IntVar(&o.shards, "shards", 4, "heap shards of the scheduler")
	fs.IntVar(&o.upstreams, "upstreams", 8, "upstreams in the pool, 2 slots each")
	fs.IntVar(&o.workers, "workers", 24, "goroutines calling the upstreams")
	fs.DurationVar(&o.maintenance, "maintenance", 2*time.Second, "how often the next upstream is taken out for maintenance")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case !isLoopback(o.addr):
		// A demo with a made-up workload has no business on a network.
		return o, fmt.Errorf("%w: -addr %q is not a loopback host:port", errUsage, o.addr)
	case o.duration <= 0:
		return o, fmt.Errorf("%w: -duration %v must be positive", errUsage, o.duration)
	case o.shards < 1 || o.shards > config.MaxHeapCount:
		return o, fmt.Errorf("%w: -shards %d must be in [1, %d]", errUsage, o.shards, config.MaxHeapCount)
	case o.upstreams < 1:
		return o, fmt.Errorf("%w: -upstreams %d must be at least 1", errUsage, o.upstreams)
	case o.workers < 1:
		return o, fmt.Errorf("%w: -workers %d must be at least 1", errUsage, o.workers)
	case o.maintenance <= 0:
		return o, fmt.Errorf("%w: -maintenance %v must be positive", errUsage, o.maintenance)
	}
	return o, nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func realMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return 1
	}
	fmt.Fprintf(stdout, "serving http://%s/metrics for %v (Ctrl-C stops earlier)\n", ln.Addr(), o.duration)
	if err := run(ctx, ln, o); err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return 1
	}
	fmt.Fprintln(stdout, "stopped")
	return 0
}

// run serves the pool's metrics on ln while the workload runs, until ctx
// ends or o.duration has passed, then stops the server, the workload and
// the scheduler, in that order, and closes ln.
func run(ctx context.Context, ln net.Listener, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	p, err := newPool(o.shards, o.upstreams, leaseTTL)
	if err != nil {
		ln.Close()
		return err
	}
	defer p.sched.Shutdown()

	var wg sync.WaitGroup
	var workErr, maintainErr error
	// A part that fails stops the others: a demo half running would
	// serve misleading metrics.
	wg.Go(func() {
		if _, workErr = simulate(ctx, p.sched, demoWorkload(o.workers)); workErr != nil {
			cancel()
		}
	})
	wg.Go(func() {
		if maintainErr = maintain(ctx, p.sched, p.names, o.maintenance); maintainErr != nil {
			cancel()
		}
	})
	serveErr := serve(ctx, ln, p.handler())
	cancel() // the server may have failed on its own
	wg.Wait()
	return errors.Join(serveErr, workErr, maintainErr)
}
