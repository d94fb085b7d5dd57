package redispool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// BenchmarkTenantLimitAcrossReplicas: three replicas (Pools with their
// own connections) share 4 resources; 12 callers of an unlimited tenant
// hold them 1 ms each, back to back, beside 3 callers of a tenant
// limited to 20 requests a second, for one second an iteration, then
// the unlimited callers alone for as long (-benchtime 10x: 22 s, with the
// run of one iteration that go test makes first). It fails if a call
// fails or a window of the limited tenant's grants surely holds more
// than the limit allows (see refereeSpans), and reports the limited
// tenant's grants a second and the other tenant's grants against its
// grants alone.
func BenchmarkTenantLimitAcrossReplicas(b *testing.B) {
	needRedis(b)
	limit := config.Limit{Name: "requests", Max: 20, Per: time.Second}
	span := time.Duration(b.N) * time.Second
	b.ResetTimer()
	limited, other := tenantLimitRun(b, limit, span, true)
	_, alone := tenantLimitRun(b, limit, span, false)
	b.StopTimer()
	if err := refereeSpans(limited, limit); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(limited))/span.Seconds(), "limited-grants/s")
	b.ReportMetric(float64(other)/float64(alone), "other-vs-alone")
	b.ReportMetric(0, "ns/op")
}

// grantSpan is one grant seen by its caller: the server granted it at
// an instant between the call (from) and its return (to).
type grantSpan struct{ from, to time.Time }

// tenantLimitRun runs the callers for span on fresh replicas, and
// returns the limited tenant's grants (when withLimited) and the count
// of the other tenant's.
func tenantLimitRun(b *testing.B, limit config.Limit, span time.Duration, withLimited bool) (limited []grantSpan, other int64) {
	ps := []*Pool{newPool(b, newClient(b), Options{})}
	for range 2 {
		ps = append(ps, newPool(b, newClient(b), Options{Name: ps[0].name}))
	}
	for i := range 4 {
		add(b, ps[0], Resource{ID: fmt.Sprintf("r%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), span)
	defer cancel()
	if err := ps[1].SyncTenants(ctx, []Tenant{{Name: "limited", Limits: []config.Limit{limit}}}); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var others atomic.Int64
	var wg sync.WaitGroup
	caller := func(p *Pool, tenant string) {
		defer wg.Done()
		for ctx.Err() == nil {
			from := time.Now()
			l, err := p.Acquire(ctx, WithTenant(tenant))
			if err != nil {
				if ctx.Err() == nil {
					b.Errorf("Acquire for %s: %v", tenant, err)
				}
				return // the span is over
			}
			to := time.Now()
			if tenant == "limited" {
				mu.Lock()
				limited = append(limited, grantSpan{from, to})
				mu.Unlock()
			} else {
				others.Add(1)
				time.Sleep(time.Millisecond)
			}
			if err := l.Release(context.Background()); err != nil {
				b.Errorf("Release for %s: %v", tenant, err)
				return
			}
		}
	}
	for i := range 12 {
		wg.Add(1)
		go caller(ps[i%3], "other")
	}
	if withLimited {
		for i := range 3 {
			wg.Add(1)
			go caller(ps[i], "limited")
		}
	}
	wg.Wait()
	return limited, others.Load()
}

// refereeSpans checks the grants of one unit each against l: no window
// [a, e] may hold more grants than Max + Max*(e-a)/Per. A grant is
// counted in a window only if its whole span lies in it, so that the
// check never blames the pool for a caller's latency; the server reads
// its clock in whole milliseconds, so each window is widened by one.
func refereeSpans(spans []grantSpan, l config.Limit) error {
	slices.SortFunc(spans, func(x, y grantSpan) int { return x.from.Compare(y.from) })
	for i, first := range spans {
		ends := make([]time.Time, 0, len(spans)-i)
		for _, s := range spans[i:] {
			ends = append(ends, s.to)
		}
		slices.SortFunc(ends, time.Time.Compare)
		for k, e := range ends {
			width := e.Sub(first.from) + time.Millisecond
			allowed := float64(l.Max) + float64(l.Max)*float64(width)/float64(l.Per)
			if float64(k+1) > allowed {
				return fmt.Errorf("%d grants within %v from %v: above the %v the limit allows", k+1, width, first.from, allowed)
			}
		}
	}
	return nil
}

func TestRefereeSpansBlamesOnlyAWindowSurelyOverTheLimit(t *testing.T) {
	l := config.Limit{Name: "requests", Max: 20, Per: time.Second}
	t0 := time.Now()
	var burst, vague []grantSpan
	for i := range 25 {
		at := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		burst = append(burst, grantSpan{at, at.Add(100 * time.Microsecond)})
		vague = append(vague, grantSpan{t0, t0.Add(2 * time.Second)}) // each may have come any time in 2 s
	}
	if err := refereeSpans(burst, l); err == nil {
		t.Fatal("25 grants in 2.6 ms passed a limit of 20 a second")
	}
	if err := refereeSpans(vague, l); err != nil {
		t.Fatalf("25 grants that may have spread over 2 s: %v", err)
	}
}
