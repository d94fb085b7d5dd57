package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTenantsScenarioDefaultsGiveTheIssuesWorkload(t *testing.T) {
	c := scenarioConfig(t, Tenants)
	tc := c.Tenants
	if c.Resources != 1 || c.Duration != 5*time.Second || tc.Workers != [2]int{12, 2} || tc.Weights != [2]int64{1, 1} ||
		tc.Interactive != 1 || tc.Priority != 5 || tc.Hold != 500*time.Microsecond {
		t.Fatalf("tenants: %d keys for %v, %+v", c.Resources, c.Duration, tc)
	}
}

func TestTenantsFlagsParse(t *testing.T) {
	o, err := ParseFlags([]string{"-scenario", "tenants", "-tenant-weights", "3:1", "-tenant-workers", "8:4",
		"-interactive", "2", "-interactive-priority", "9", "-hold", "1ms", "-resources", "2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := TenantsConfig{Weights: [2]int64{3, 1}, Workers: [2]int{8, 4}, Interactive: 2, Priority: 9, Hold: time.Millisecond}
	if o.Config.Tenants != want || o.Config.Resources != 2 {
		t.Fatalf("parsed %+v on %d keys, want %+v", o.Config.Tenants, o.Config.Resources, want)
	}
}

func TestTenantsFlagsRejectBadInputWithAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"-tenant-weights", "0:1"},
		{"-tenant-weights", "3"},
		{"-tenant-weights", "a:b"},
		{"-tenant-weights", "1:9999999999999999"},
		{"-tenant-workers", "12:0"},
		{"-tenant-workers", "-1:2"},
		{"-tenant-workers", "20000:2"},
		{"-interactive", "-1"},
		{"-interactive-priority", "0"},
		{"-interactive", "0", "-interactive-priority", "3"},
		{"-hold", "0s"},
		{"-hold", "2s"},
		{"-resources", "0"},
		{"-duration", "0s"},
		{"-compare"},
		{"-html", "x.html"},
		{"-workers", "10"},
		{"-pool", "mutex"},
	} {
		var out, errs bytes.Buffer
		args = append([]string{"-scenario", "tenants"}, args...)
		if status := Main(context.Background(), args, &out, &errs); status != 2 || !strings.HasSuffix(errs.String(), "(see -h)\n") {
			t.Errorf("%v: status %d, stderr %q; want a usage error", args, status, errs.String())
		}
	}
	for _, args := range [][]string{{"-hold", "1ms"}, {"-tenant-weights", "3:1"}, {"-scenario", "llm", "-interactive", "2"}} {
		if _, err := ParseFlags(args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "only with -scenario tenants") {
			t.Errorf("%v outside the tenants scenario: %v", args, err)
		}
	}
}

// The scenario's report, in JSON, has both runs, each tenant's share
// against its weight's, Jain's index and the interactive waits; and the
// run with tenants comes nearer the weights than first come, first
// served, where the heavy tenant's 12 callers outnumber the light one's 2.
func TestTheTenantsRunSharesNearerTheWeightsThanFirstComeFirstServed(t *testing.T) {
	var out, errs bytes.Buffer
	status := Main(context.Background(), []string{"-scenario", "tenants", "-duration", "300ms", "-hold", "200us",
		"-progress", "off", "-json", "-"}, &out, &errs)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs.String())
	}
	var tr TenantsReport
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if !tr.Accounting.OK || tr.FCFS == nil || tr.Pool != "crs" || tr.Environment.CPUs == 0 || tr.Interrupted != nil {
		t.Fatalf("accounting %v, FCFS run %v, pool %q, environment %+v, interrupted %v", tr.Accounting, tr.FCFS, tr.Pool, tr.Environment, tr.Interrupted)
	}
	distance := map[string]float64{}
	for _, run := range []TenantsRun{tr.Fair, *tr.FCFS} {
		if len(run.Tenants) != 2 || run.Interactive == nil || run.Interactive.Priority != 5 || run.Interactive.Wait.Count == 0 ||
			run.Interactive.Wait.P50 > run.Interactive.Wait.P99 || run.Jain <= 0 || run.Jain > 1 {
			t.Fatalf("%s: report %+v", run.Mode, run)
		}
		heavy, light := run.Tenants[0], run.Tenants[1]
		if heavy.Name != HeavyTenant || light.Name != LightTenant || heavy.WeightShare != 0.5 || heavy.Grants == 0 || light.Grants == 0 {
			t.Fatalf("%s: tenants %+v", run.Mode, run.Tenants)
		}
		distance[run.Mode] = math.Abs(heavy.Share - heavy.WeightShare)
	}
	if fair, fcfs := distance[tr.Fair.Mode], distance[tr.FCFS.Mode]; fair >= fcfs || tr.Fair.Jain <= tr.FCFS.Jain {
		t.Errorf("heavy share off its weight's by %.3f with tenants, %.3f first come first served; Jain %.3f and %.3f",
			fair, fcfs, tr.Fair.Jain, tr.FCFS.Jain)
	}
	text := errs.String() // the text report goes to stderr when the JSON goes to stdout
	for _, want := range []string{"heavy share (weight 1: 50.00%)", "Jain's fairness index", "interactive wait p99", "Accounting: OK"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

func TestJainsIndexIsOneAtTheWeightsAndOneOverNForOneTenantAlone(t *testing.T) {
	at := []TenantShare{{Share: 0.75, WeightShare: 0.75}, {Share: 0.25, WeightShare: 0.25}}
	alone := []TenantShare{{Share: 1, WeightShare: 0.5}, {Share: 0, WeightShare: 0.5}}
	if got := jain(at); math.Abs(got-1) > 1e-12 {
		t.Errorf("shares at the weights: %v, want 1", got)
	}
	if got := jain(alone); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("one tenant alone: %v, want 1/2", got)
	}
}

// keyPool is an extension's tenants pool for the tests: keys in a
// channel, first come, first served whatever the tenant.
type keyPool struct{ keys chan struct{} }

type keyLease struct{ p *keyPool }

func (l keyLease) Release() error { l.p.keys <- struct{}{}; return nil }

func (p *keyPool) Lease(ctx context.Context, _ string, _ int) (TenantsLease, error) {
	select {
	case <-p.keys:
		return keyLease{p}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *keyPool) Finish(map[string]uint64) []Check {
	return []Check{{Name: "every key came back", OK: len(p.keys) == cap(p.keys)}}
}

func (p *keyPool) Close() {}

func TestAnExtensionWithTenantsRunsTheScenarioOnItsPool(t *testing.T) {
	var opened int
	ext := fakeExtension(&opened)
	var fairs []bool
	ext.Tenants = func(_ context.Context, cfg Config, fair bool) (TenantsPool, error) {
		fairs = append(fairs, fair)
		p := &keyPool{keys: make(chan struct{}, cfg.Resources)}
		for range cfg.Resources {
			p.keys <- struct{}{}
		}
		return p, nil
	}
	var out, errs bytes.Buffer
	status := MainWith(context.Background(), []string{"-fake", "-scenario", "tenants", "-duration", "50ms", "-progress", "off", "-json", "-"},
		&out, &errs, ext)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs.String())
	}
	var tr TenantsReport
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if len(fairs) != 2 || !fairs[0] || fairs[1] || tr.Pool != "fake" || tr.PoolTitle != "the fake pool" || opened != 0 {
		t.Fatalf("opened with fair %v, report on %q (%q), Open called %d times", fairs, tr.Pool, tr.PoolTitle, opened)
	}
	if n := len(tr.Accounting.Checks); n == 0 || !strings.Contains(tr.Accounting.Checks[0].Name, "every key came back") {
		t.Fatalf("the pool's checks are not in the accounting: %+v", tr.Accounting)
	}
}

func TestAnExtensionWithoutTenantsRefusesTheScenario(t *testing.T) {
	var opened int
	var out, errs bytes.Buffer
	status := MainWith(context.Background(), []string{"-fake", "-scenario", "tenants"}, &out, &errs, fakeExtension(&opened))
	if status != 2 || !strings.Contains(errs.String(), "not on the fake pool") {
		t.Fatalf("status %d: %s", status, errs.String())
	}
}

// An interrupted run reports the run it was in and skips the other.
func TestAnInterruptedTenantsRunSaysSoAndSkipsTheSecondRun(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(Interrupt{Signal: syscall.SIGINT})
	cfg := scenarioConfig(t, Tenants)
	r, err := Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Interrupted == nil || r.Tenants == nil || r.Tenants.FCFS != nil || r.Tenants.Interrupted == nil {
		t.Fatalf("interrupted %+v, report %+v", r.Interrupted, r.Tenants)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil || !strings.Contains(b.String(), "INTERRUPTED") {
		t.Fatalf("text (%v):\n%s", err, b.String())
	}
}
