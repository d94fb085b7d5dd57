package redispool

// What BenchmarkVersusLock measures of one system on one workload: the
// holds, waits and commands of each goroutine's run, merged over runs
// and processes, and the server's CPU.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// span is a hold: from Acquire's return to Release's call (wall clock,
// ns, which every process of the machine reads alike).
type span struct {
	Resource   int
	Start, End int64
}

// phase is what the goroutines of one process did in one run.
type phase struct {
	Acquired, Released int64
	InWindow           int64   // acquisitions that returned before the end
	Cmds, Failed       int64   // the hook's counts
	ElapsedNs          int64   // from the start to the return of the last goroutine
	BusyNs             int64   // the holds, clipped to the run's window
	WaitsNs            []int64 // each Acquire's duration
	Holds              []span  // kept for the check across processes
	Errors             []string
}

func (p *phase) add(q phase) {
	p.Acquired += q.Acquired
	p.Released += q.Released
	p.InWindow += q.InWindow
	p.Cmds += q.Cmds
	p.Failed += q.Failed
	p.ElapsedNs = max(p.ElapsedNs, q.ElapsedNs)
	p.BusyNs += q.BusyNs
	p.WaitsNs = append(p.WaitsNs, q.WaitsNs...)
	p.Holds = append(p.Holds, q.Holds...)
	p.Errors = append(p.Errors, q.Errors...)
}

// runPhase runs goroutines that, from start until end, acquire from sys,
// hold for hold and release; a goroutine whose Acquire returns after
// end still holds and releases what it got. Each holder checks a
// per-resource counter: a resource held twice at once in this process
// is an error of the phase.
func runPhase(sys contender, hook *versusHook, goroutines, resources int, hold time.Duration, start, end time.Time, keepHolds bool) phase {
	ctx := context.Background()
	inUse := make([]atomic.Int32, resources)
	cmds, failed := hook.cmds.Load(), hook.failed.Load()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out phase
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine phase
			defer func() {
				mu.Lock()
				out.add(mine)
				mu.Unlock()
			}()
			time.Sleep(time.Until(start))
			for time.Now().Before(end) {
				t0 := time.Now()
				g, err := sys.acquire(ctx)
				t1 := time.Now()
				if err != nil {
					mine.Errors = append(mine.Errors, fmt.Sprintf("acquire: %v", err))
					return
				}
				mine.Acquired++
				if t1.Before(end) {
					mine.InWindow++
				}
				mine.WaitsNs = append(mine.WaitsNs, int64(t1.Sub(t0)))
				if g.resource < 0 || g.resource >= resources {
					mine.Errors = append(mine.Errors, fmt.Sprintf("acquired resource %d of %d", g.resource, resources))
					return
				}
				if n := inUse[g.resource].Add(1); n != 1 {
					mine.Errors = append(mine.Errors, fmt.Sprintf("resource %d held by %d goroutines at once", g.resource, n))
				}
				if hold > 0 {
					time.Sleep(hold)
				}
				t2 := time.Now()
				inUse[g.resource].Add(-1)
				mine.BusyNs += overlap(t1, t2, start, end)
				if keepHolds {
					mine.Holds = append(mine.Holds, span{g.resource, t1.UnixNano(), t2.UnixNano()})
				}
				if err := sys.release(ctx, g); err != nil {
					mine.Errors = append(mine.Errors, fmt.Sprintf("release %d: %v", g.resource, err))
					return
				}
				mine.Released++
			}
		}()
	}
	wg.Wait()
	out.ElapsedNs = int64(time.Since(start))
	out.Cmds = hook.cmds.Load() - cmds
	out.Failed = hook.failed.Load() - failed
	return out
}

// overlap is how long [a, b] and [from, to] have in common, in ns.
func overlap(a, b, from, to time.Time) int64 {
	if a.Before(from) {
		a = from
	}
	if b.After(to) {
		b = to
	}
	return max(int64(b.Sub(a)), 0)
}

// overlaps lists (the first few) holds of one resource that overlap.
func overlaps(holds []span) []string {
	hs := append([]span(nil), holds...)
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Resource != hs[j].Resource {
			return hs[i].Resource < hs[j].Resource
		}
		return hs[i].Start < hs[j].Start
	})
	var bad []string
	for i := 1; i < len(hs) && len(bad) < 10; i++ {
		if prev, cur := hs[i-1], hs[i]; cur.Resource == prev.Resource && cur.Start < prev.End {
			bad = append(bad, fmt.Sprintf("resource %d held twice: [%d, %d] and [%d, %d]", cur.Resource, prev.Start, prev.End, cur.Start, cur.End))
		}
	}
	return bad
}

func TestOverlapsFindsAResourceHeldTwice(t *testing.T) {
	good := []span{{0, 0, 10}, {1, 5, 20}, {0, 10, 15}, {1, 20, 30}}
	if bad := overlaps(good); len(bad) != 0 {
		t.Fatalf("holds one after another are reported: %v", bad)
	}
	if bad := overlaps([]span{{0, 10, 15}, {1, 0, 20}, {0, 0, 11}}); len(bad) != 1 {
		t.Fatalf("one overlap: reported %v", bad)
	}
}

// measure is one system's figures on one workload, summed over rounds.
type measure struct {
	phase
	resources int
	windowNs  int64 // the runs' windows, start to end
	cpu       time.Duration
}

// merge adds a run (or the runs of another measure) to m.
func (m *measure) merge(q measure) {
	elapsed := m.ElapsedNs
	m.add(q.phase)
	m.ElapsedNs = elapsed + q.ElapsedNs // runs add up; add keeps the longest process
	m.Holds = nil                       // checked by run
	m.windowNs += q.windowNs
	m.cpu += q.cpu
	m.resources = q.resources
	sort.Slice(m.WaitsNs, func(i, j int) bool { return m.WaitsNs[i] < m.WaitsNs[j] })
}

func (m measure) seconds() float64 { return time.Duration(m.ElapsedNs).Seconds() }

// rate: acquisitions per second of the window (those after it, by
// goroutines that were waiting when it ended, are not counted).
func (m measure) rate() float64 {
	return float64(m.InWindow) / time.Duration(m.windowNs).Seconds()
}

// cpuPerOp: server CPU per acquire+release.
func (m measure) cpuPerOp() time.Duration { return m.cpu / time.Duration(max(m.Released, 1)) }

func (m measure) cpuShare() float64 { return m.cpu.Seconds() / m.seconds() }

// busy: the share of the resources' time that holders held them.
func (m measure) busy() float64 {
	return float64(m.BusyNs) / (float64(m.resources) * float64(m.windowNs))
}

func (m measure) perAcquisition(n int64) float64 { return float64(n) / float64(max(m.Acquired, 1)) }

// wait is the quantile q of the waits in ms (q < 0: the mean).
func (m measure) wait(q float64) float64 {
	if len(m.WaitsNs) == 0 {
		return 0
	}
	if q < 0 {
		var sum float64
		for _, w := range m.WaitsNs {
			sum += float64(w)
		}
		return sum / float64(len(m.WaitsNs)) / 1e6
	}
	return float64(m.WaitsNs[int(q*float64(len(m.WaitsNs)-1))]) / 1e6
}

// serverCPU is the server's CPU time so far (INFO cpu: system + user,
// all its threads).
func serverCPU(ctx context.Context, c *redis.Client) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	found := 0
	for _, line := range strings.Split(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu: %s: %w", line, err)
			}
			total += v
			found++
		}
	}
	if found != 2 {
		return 0, fmt.Errorf("INFO cpu without used_cpu_sys and used_cpu_user: %q", info)
	}
	return time.Duration(total * float64(time.Second)), nil
}
