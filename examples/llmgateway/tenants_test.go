package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/stats"
)

// tenantGateway serves a Gateway with options o (its clock clk) in front
// of upstream, on loopback.
func tenantGateway(t *testing.T, upstream string, keys []Key, clk *fakeclock.Clock, o Options) (*Gateway, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	o.Clock = clk
	g, err := NewGateway(u, keys, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		g.Close()
	})
	return g, srv.URL
}

// postAs sends a chat call with the headers given, name then value. It
// may run on a goroutine of the test's, so it reports a failed call with
// t.Error, and status 0.
func postAs(t *testing.T, gatewayURL string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gatewayURL+"/v1/chat/completions", strings.NewReader(chatBody))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func grantsOf(st stats.Stats) (n uint64) {
	for _, t := range st.Tenants {
		n += t.Grants
	}
	return n
}

func TestABadTenantOrPriorityIsA400ThatCostsNothing(t *testing.T) {
	up, seen := upstream(t, nil)
	closed, closedURL := tenantGateway(t, up, twoKeys[:1], fakeclock.New(), Options{Tenants: map[string]config.Tenant{"search": {Weight: 3}}})
	open, openURL := tenantGateway(t, up, twoKeys[:1], fakeclock.New(), Options{})
	bad := [][]string{
		{PriorityHeader, "high"}, {PriorityHeader, "10"}, {PriorityHeader, "-10"}, {PriorityHeader, "1.5"}, {PriorityHeader, ""},
		{PriorityHeader, "1", PriorityHeader, "2"},
		{TenantHeader, ""}, {TenantHeader, "a b"}, {TenantHeader, "é"}, {TenantHeader, strings.Repeat("x", 65)},
		{TenantHeader, "search", TenantHeader, "search"},
	}
	for _, gw := range []struct {
		g   *Gateway
		url string
	}{{closed, closedURL}, {open, openURL}} {
		for _, h := range bad {
			if status, body := postAs(t, gw.url, h...); status != http.StatusBadRequest {
				t.Errorf("%q: status %d (%s), want 400", h, status, body)
			}
		}
		if left, _ := gw.g.sched.Remaining("a"); left["tokens"] != 10000 || left["requests"] != 100 || grantsOf(gw.g.sched.Stats()) != 0 {
			t.Fatalf("after bad headers: %v left, %d grants", left, grantsOf(gw.g.sched.Stats()))
		}
	}
	if status, body := postAs(t, closedURL, TenantHeader, "ads"); status != http.StatusBadRequest || !strings.Contains(body, "unknown tenant") {
		t.Errorf("a tenant not in Options.Tenants: status %d (%s), want 400", status, body)
	}
	if st := open.sched.Stats(); st.Tenants != nil || len(seen()) != 0 {
		t.Fatalf("after bad headers: tenants %v in the scheduler, the provider saw %v", st.Tenants, seen())
	}
	if status, body := postAs(t, openURL, TenantHeader, "any-team.1", PriorityHeader, "-9"); status != http.StatusOK {
		t.Fatalf("any valid tenant without Options.Tenants: status %d (%s)", status, body)
	}
}

func TestTheTenantAndPriorityReachTheSchedulerButNotTheProvider(t *testing.T) {
	var mu sync.Mutex
	var sent http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		sent = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}`)
	}))
	t.Cleanup(up.Close)
	g, url := tenantGateway(t, up.URL, twoKeys[:1], fakeclock.New(), Options{Tenants: map[string]config.Tenant{"search": {Weight: 3}}})
	if status, body := postAs(t, url, TenantHeader, " search ", PriorityHeader, "5"); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	st := g.sched.Stats()
	var search *stats.TenantStats
	for i := range st.Tenants {
		if st.Tenants[i].Name == "search" {
			search = &st.Tenants[i]
		}
	}
	if search == nil || search.Grants != 1 || search.Usage != 10 || len(st.Priorities) == 0 || st.Priorities[0].Priority != 5 {
		t.Fatalf("the scheduler's tenants %+v, priorities %+v; want search with 1 grant of 10 tokens, at priority 5", st.Tenants, st.Priorities)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent.Get(TenantHeader) != "" || sent.Get(PriorityHeader) != "" || sent.Get("Authorization") != "Bearer sk-a" {
		t.Fatalf("the provider saw %v", sent)
	}
}

// One key of one request a minute: a batch call waits for it, then an
// interactive one; the request the minute brings back goes to the
// interactive call, the next to the batch one.
func TestAnInteractiveCallGoesBeforeABatchCallThatWaitedLonger(t *testing.T) {
	up, _ := upstream(t, nil)
	clk := fakeclock.New()
	g, url := tenantGateway(t, up, []Key{{Name: "a", Secret: "sk-a", RPM: 1}}, clk,
		Options{Tenants: map[string]config.Tenant{"batch": {}, "chat": {}}})
	if status, body := postAs(t, url, TenantHeader, "batch"); status != http.StatusOK {
		t.Fatalf("the first call: status %d: %s", status, body)
	}
	served := make(chan string, 2)
	call := func(tenant, priority string) {
		if status, body := postAs(t, url, TenantHeader, tenant, PriorityHeader, priority); status != http.StatusOK {
			t.Errorf("%s: status %d: %s", tenant, status, body)
		}
		served <- tenant
	}
	go call("batch", "0")
	untilWaiting(g, 1)
	go call("chat", "5")
	untilWaiting(g, 2)
	clk.Advance(time.Minute)
	if first := <-served; first != "chat" {
		t.Fatalf("the refilled request went to %s, want the interactive call", first)
	}
	untilWaiting(g, 1)
	clk.Advance(time.Minute)
	if second := <-served; second != "batch" {
		t.Fatalf("then %s", second)
	}
}

// untilWaiting returns once n calls wait for a key: the scheduler's count
// is the only sign that a call has queued, read in a loop that yields.
func untilWaiting(g *Gateway, n int) {
	for g.sched.Stats().Waiters != n {
		runtime.Gosched()
	}
}

func TestACallAboveItsTenantsBudgetIsRefusedAtOnce(t *testing.T) {
	up, seen := upstream(t, nil)
	_, url := tenantGateway(t, up, twoKeys[:1], fakeclock.New(), Options{Tenants: map[string]config.Tenant{
		"small": {Weight: 1, Limits: []config.Limit{{Name: "tokens", Max: 20, Per: time.Minute}}},
	}})
	if status, body := postAs(t, url, TenantHeader, "small"); status != http.StatusBadRequest || !strings.Contains(body, "tenant") {
		t.Fatalf("a call above its tenant's budget: status %d (%s), want 400", status, body)
	}
	if len(seen()) != 0 {
		t.Fatalf("the provider saw %v", seen())
	}
}

func TestTenantsParseFromTheFlagAndBadOnesAreRefused(t *testing.T) {
	ts, err := ParseTenants("search=3:10000, batch=1")
	if err != nil || len(ts) != 2 || ts["search"].Weight != 3 || len(ts["search"].Limits) != 1 ||
		ts["search"].Limits[0].Max != 10000 || ts["batch"].Weight != 1 || ts["batch"].Limits != nil {
		t.Fatalf("ParseTenants: %+v, %v", ts, err)
	}
	if ts, err := ParseTenants(" "); ts != nil || err != nil {
		t.Fatalf("empty: %v, %v", ts, err)
	}
	for _, s := range []string{"search", "search=0", "search=x", "search=1:0", "search=1:x", "a b=1", "a=1,a=2", "a=1,",
		"a=9999999999999999999", "a=1:9999999999999999"} {
		if _, err := ParseTenants(s); err == nil {
			t.Errorf("ParseTenants(%q) accepted", s)
		}
	}
	_, err = NewGateway(&url.URL{Scheme: "http", Host: "h"}, twoKeys, Options{Tenants: map[string]config.Tenant{"a": {Weight: -1}}})
	if !errors.Is(err, crserrors.ErrInvalidTenant) {
		t.Fatalf("NewGateway with a weight of -1: %v, want ErrInvalidTenant", err)
	}
}
