package prometheus_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// tokensPool is a pool of keys of capacity 1, each with a budget of
// tokens a minute (its priority), on a fake clock.
func tokensPool(t *testing.T, clock config.Clock, ids ...string) *pool {
	t.Helper()
	sched := newPool(t, config.Config[*worker, string]{
		HeapCount:     2,
		AcquirePolicy: config.Exclusive,
		Clock:         clock,
		Limits: func(w *worker) []config.Limit {
			return []config.Limit{
				{Name: "requests", Max: 10, Per: time.Minute},
				{Name: "tokens", Max: int64(w.priority), Per: time.Minute},
			}
		},
	})
	for i, id := range ids {
		must(t, "Add "+id, sched.Add(&worker{id, 600 * (i + 1)}))
	}
	return sched
}

// scrapeOverHTTP serves reg on a loopback port and fetches it once, as
// Prometheus would.
func scrapeOverHTTP(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v\n%s", resp.Status, err, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return families
}

// series maps each series of name in families, by its labels' values
// joined with spaces, to its value.
func series(families map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if key != "" {
				key += " "
			}
			key += l.GetName() + "=" + l.GetValue()
		}
		switch {
		case m.Gauge != nil:
			out[key] = m.GetGauge().GetValue()
		case m.Counter != nil:
			out[key] = m.GetCounter().GetValue()
		case m.Untyped != nil:
			out[key] = m.GetUntyped().GetValue()
		}
	}
	return out
}

func TestWithBudgetsExportsEachResourcesRemainingBudget(t *testing.T) {
	clock := fakeclock.New()
	sched := tokensPool(t, clock, "a", "b")
	l, err := sched.Lease(context.Background(), scheduler.WithCost(config.Cost{"tokens": 500}))
	must(t, "Lease", err) // a, of 600 tokens
	must(t, "Settle", l.Settle(config.Cost{"tokens": 700}))
	must(t, "Release", l.Release())

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, nil, crsprom.WithBudgets(sched.Budgets), poolLabel("keys")))
	got := series(scrapeOverHTTP(t, reg), "crs_budget_remaining")
	want := map[string]float64{
		"limit=requests pool=keys resource=a": 9,
		"limit=tokens pool=keys resource=a":   -100,
		"limit=requests pool=keys resource=b": 10,
		"limit=tokens pool=keys resource=b":   1200,
	}
	if len(got) != len(want) {
		t.Fatalf("crs_budget_remaining = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("crs_budget_remaining{%s} = %v, want %v", k, got[k], v)
		}
	}

	// The next scrape reads the budgets again: a refilled in the
	// meantime (600 tokens a minute), and b is gone.
	clock.Advance(20 * time.Second)
	must(t, "Remove b", sched.Remove("b"))
	got = series(scrapeOverHTTP(t, reg), "crs_budget_remaining")
	if len(got) != 2 || got["limit=tokens pool=keys resource=a"] != 100 {
		t.Fatalf("after 20 s and Remove(b), crs_budget_remaining = %v, want a's two budgets, 100 tokens", got)
	}
}

func TestBudgetsAreNotExportedUnlessAskedFor(t *testing.T) {
	sched := tokensPool(t, fakeclock.New(), "a")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, nil))
	families := scrapeOverHTTP(t, reg)
	if _, ok := families["crs_budget_remaining"]; ok {
		t.Fatal("crs_budget_remaining exported without WithBudgets")
	}
	if len(families) == 0 {
		t.Fatal("nothing exported")
	}
}

func TestWithBudgetsRefusesANilSource(t *testing.T) {
	sched := tokensPool(t, fakeclock.New(), "a")
	_, err := crsprom.New(sched, nil, crsprom.WithBudgets[string](nil))
	if !errors.Is(err, crsprom.ErrNilStats) {
		t.Fatalf("WithBudgets(nil): New returned %v, want ErrNilStats", err)
	}
}

func TestWithBudgetsFormatsKeysThatAreNotStrings(t *testing.T) {
	sched, err := scheduler.New(config.Config[int, int]{
		Comparator: func(a, b int) int { return a - b },
		KeyFunc:    func(v int) int { return v },
		Limits: func(int) []config.Limit {
			return []config.Limit{{Name: "requests", Max: 5, Per: time.Second}}
		},
	})
	must(t, "New", err)
	t.Cleanup(sched.Shutdown)
	must(t, "Add", sched.Add(42))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, nil, crsprom.WithBudgets(sched.Budgets)))
	got := series(scrapeOverHTTP(t, reg), "crs_budget_remaining")
	if len(got) != 1 || got["limit=requests resource=42"] != 5 {
		t.Fatalf("crs_budget_remaining = %v, want resource=42 with 5 requests", got)
	}
}

// untilLimitWaits returns once sched has counted n limit waits: the
// count is taken as the waiter commits to waiting, the one signal it
// gives from outside the package.
func untilLimitWaits(t *testing.T, sched *pool, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for sched.Stats().LimitWaits < n {
		if time.Now().After(deadline) {
			t.Fatalf("LimitWaits = %d, want %d", sched.Stats().LimitWaits, n)
		}
		runtime.Gosched()
	}
}

func TestLimitWaitsTotalLeavesOutWaitsForAFullResource(t *testing.T) {
	clock := fakeclock.New()
	sched := tokensPool(t, clock, "k") // 600 tokens a minute
	ctx := context.Background()
	tokens := func(n int64) scheduler.LeaseOption { return scheduler.WithCost(config.Cost{"tokens": n}) }
	leaseAndRelease := func(cost int64, done chan<- error) {
		l, err := sched.Lease(ctx, tokens(cost))
		if err == nil {
			err = l.Release()
		}
		done <- err
	}

	// k held and out of tokens: a caller waits for its slot, which it
	// would do without limits too.
	l, err := sched.Lease(ctx, tokens(600))
	must(t, "Lease", err)
	done := make(chan error, 1)
	go leaseAndRelease(100, done)
	untilWaiting(sched, 1)
	clock.Advance(10 * time.Second) // 100 tokens back; the slot still held
	must(t, "Release", l.Release())
	must(t, "waiter for the slot", <-done)

	// k free and out of tokens: a caller waits for its limits alone.
	go leaseAndRelease(100, done)
	untilLimitWaits(t, sched, 1)
	clock.Advance(10 * time.Second)
	must(t, "waiter for the tokens", <-done)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, nil))
	if got := series(scrapeOverHTTP(t, reg), "crs_limit_waits_total")[""]; got != 1 {
		t.Fatalf("crs_limit_waits_total = %v, want 1: only the wait for tokens", got)
	}
}
