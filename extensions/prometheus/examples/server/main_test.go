package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"
)

// The server, the workload and the scheduler must all be gone when run
// returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() }) // closing twice is harmless
	return ln
}

// scrape fetches /metrics from addr over real HTTP and parses it.
func scrape(t *testing.T, addr net.Addr) map[string]*dto.MetricFamily {
	t.Helper()
	// No keep-alive: no idle connection outlives the test.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(fmt.Sprintf("http://%s/metrics", addr))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return families
}

// value returns the value of the series of name whose labels include
// want, failing if there is not exactly one.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	mf, ok := families[name]
	if !ok {
		t.Fatalf("%s not served", name)
	}
	var found []float64
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["pool"] != poolName {
			t.Fatalf("%s%v has no pool=%q label", name, labels, poolName)
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			match = match && labels[want[i]] == want[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			found = append(found, m.GetGauge().GetValue())
		case m.Counter != nil:
			found = append(found, m.GetCounter().GetValue())
		case m.Histogram != nil:
			found = append(found, float64(m.GetHistogram().GetSampleCount()))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

func TestServerServesTheWorkloadsMetricsOverHTTP(t *testing.T) {
	const shards, upstreams = 3, 4
	p, err := newPool(shards, upstreams, leaseTTL)
	if err != nil {
		t.Fatalf("newPool: %v", err)
	}
	t.Cleanup(p.sched.Shutdown)
	// Eight workers for eight slots, a short patience: waits, some given
	// up. The run has a fixed number of calls and ends by itself.
	w := workload{workers: 8, rounds: 20, maxCall: time.Millisecond, patience: 200 * time.Microsecond,
		throttleEvery: 10, cooldown: time.Millisecond, seed: 7}
	done, err := simulate(context.Background(), p.sched, w)
	if err != nil {
		t.Fatalf("simulate: %v", err)
	}
	// Shutdown delivers the queued events and stops the expiry timer:
	// from here on nothing changes, so every served value is exact.
	p.sched.Shutdown()
	st, counts := p.sched.Stats(), p.telemetry.Snapshot()

	ctx, cancel := context.WithCancel(context.Background())
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, p.handler()) }()
	families := scrape(t, ln.Addr())
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}

	if got := value(t, families, "crs_shards"); got != shards {
		t.Errorf("crs_shards = %v, want %d", got, shards)
	}
	states := map[string]int{
		"active": st.ActiveResources, "held": st.HeldResources, "excluded": st.ExcludedResources,
		"suspended": st.SuspendedResources, "ejected": st.EjectedResources, "rate_limited": st.RateLimitedResources,
		"other": 0, "draining": st.DrainingResources,
	}
	total := 0.0
	for state, want := range states {
		got := value(t, families, "crs_resources", "state", state)
		if got != float64(want) {
			t.Errorf("crs_resources{state=%q} = %v, want %d", state, got, want)
		}
		total += got
	}
	if total != upstreams {
		t.Errorf("resources in all states sum to %v, want the %d upstreams", total, upstreams)
	}
	for i, size := range st.HeapSizes {
		if got := value(t, families, "crs_shard_active_resources", "shard", fmt.Sprint(i)); got != float64(size) {
			t.Errorf("shard %d: %v active, want %d", i, got, size)
		}
	}

	calls, gaveUp := done.calls.Load(), done.gaveUp.Load()
	if calls+gaveUp != uint64(w.workers*w.rounds) {
		t.Fatalf("tally: %d calls + %d given up, want %d rounds in all", calls, gaveUp, w.workers*w.rounds)
	}
	for name, want := range map[string]uint64{
		"crs_holders":                 0, // every call released its upstream
		"crs_waiters":                 0,
		"crs_waits_total":             st.Waits,
		"crs_wait_duration_seconds":   st.Waits, // its count
		"crs_waits_cancelled_total":   gaveUp,   // each one a wait its context ended
		"crs_leases_expired_total":    st.ExpiredLeases,
		"crs_events_dropped_total":    st.DroppedEvents,
		"crs_observer_panics_total":   0,
		"crs_comparator_panics_total": 0,
		"crs_lease_failures_total":    done.failed.Load(),    // Lease.Fail calls
		"crs_suspensions_total":       done.throttled.Load(), // Lease.Cooldown calls
		"crs_ejections_total":         st.Ejections,
	} {
		if got := value(t, families, name); got != float64(want) {
			t.Errorf("%s = %v, want %d", name, got, want)
		}
	}
	// The run emits a few hundred events, fewer than the queue holds
	// (1024), so none can be dropped and the event counts are exact.
	if st.DroppedEvents != 0 {
		t.Fatalf("%d events dropped from a queue that could hold them all", st.DroppedEvents)
	}
	acquired := value(t, families, "crs_events_total", "type", "acquire")
	released := value(t, families, "crs_events_total", "type", "release")
	if acquired != float64(counts.AcquireCount) || released != float64(counts.ReleaseCount) {
		t.Errorf("served acquire/release events %v/%v, telemetry has %d/%d", acquired, released, counts.AcquireCount, counts.ReleaseCount)
	}
	// A grant the caller's context beat is given back: an acquire and a
	// release event for no call. So events cover the calls, and every
	// hold they open is closed by a release or an expiry.
	if acquired < float64(calls) {
		t.Errorf("%v acquire events for %d calls", acquired, calls)
	}
	if acquired != released+float64(st.ExpiredLeases)+float64(st.Holders) {
		t.Errorf("%v acquire events != %v releases + %d expiries + %d holders", acquired, released, st.ExpiredLeases, st.Holders)
	}
	if got := value(t, families, "crs_scheduler_info", "policy", "Exclusive"); got != 1 {
		t.Errorf("crs_scheduler_info{policy=Exclusive} = %v, want 1", got)
	}
}

func TestRunServesUntilItsContextEnds(t *testing.T) {
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := options{duration: time.Hour, shards: 2, upstreams: 2, workers: 4, maintenance: time.Millisecond}
	stopped := make(chan error, 1)
	go func() { stopped <- run(ctx, ln, o) }()

	// The listener is open already: the request waits in its backlog
	// until run serves it, with no retry.
	families := scrape(t, ln.Addr())
	if got := value(t, families, "crs_shards"); got != 2 {
		t.Errorf("crs_shards = %v, want 2", got)
	}
	if _, ok := families["crs_events_total"]; !ok {
		t.Error("crs_events_total not served: the telemetry is not wired in")
	}
	cancel() // as SIGINT does through signal.NotifyContext
	if err := <-stopped; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after run returned")
	}
}

func TestRunStopsByItselfAfterItsDuration(t *testing.T) {
	o := options{duration: time.Millisecond, shards: 1, upstreams: 1, workers: 2, maintenance: time.Hour}
	// Nothing cancels ctx: only the duration can end the run.
	if err := run(context.Background(), listen(t), o); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestFlagsDefaultToALoopbackServerForThirtySeconds(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	want := options{addr: "127.0.0.1:9464", duration: 30 * time.Second, shards: 4, upstreams: 8, workers: 24, maintenance: 2 * time.Second}
	if o != want {
		t.Fatalf("defaults = %+v, want %+v", o, want)
	}
}

func TestFlagsRefuseBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"-addr", "0.0.0.0:9464"},
		{"-addr", "example.com:9464"},
		{"-addr", "127.0.0.1"},
		{"-duration", "0s"},
		{"-shards", "0"},
		{"-shards", "1025"},
		{"-upstreams", "0"},
		{"-workers", "-1"},
		{"-maintenance", "-1s"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("parseFlags(%q) = %v, want errUsage", args, err)
		}
	}
	for _, args := range [][]string{{"-addr", "[::1]:0"}, {"-addr", "localhost:9464"}} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("parseFlags(%q) = %v, want a loopback address accepted", args, err)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestMainReportsBadFlagsWithExitCode2(t *testing.T) {
	var stderr strings.Builder
	if code := realMain([]string{"-duration", "0s"}, io.Discard, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "-duration") {
		t.Fatalf("stderr %q does not name the flag", stderr.String())
	}
}
