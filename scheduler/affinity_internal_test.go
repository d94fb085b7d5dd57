package scheduler

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/affinity"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/ring"
)

// keyPool returns a scheduler of n resources whose values are their keys,
// r0 to r(n-1), added in one batch, with its affinity ring built.
func keyPool(t testing.TB, n int, policy config.AcquirePolicy) *Scheduler[string, string] {
	t.Helper()
	s, err := New(config.Config[string, string]{
		HeapCount:     8,
		Comparator:    strings.Compare,
		KeyFunc:       func(v string) string { return v },
		AcquirePolicy: policy,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("r", i)
	}
	if err := s.BatchAdd(keys); err != nil {
		t.Fatal(err)
	}
	s.affinity.Ring()
	return s
}

// checkAffinity verifies the ring against the lookup map (see affinity),
// at a moment when no change is under way: one point for each resource
// that is not leaving, at its key's hash, in the order of those hashes,
// and no other point.
func (s *Scheduler[T, ID]) checkAffinity() error {
	r := s.affinity.Built()
	if r == nil {
		return nil
	}
	want := map[*node.Node[T, ID]]bool{}
	s.nodes.Range(func(_ ID, n *node.Node[T, ID]) {
		if !n.Leaving.Load() {
			want[n] = true
		}
	})
	var err error
	var prev *node.Node[T, ID]
	r.Window(0, r.Len(), func(pos []uint32, val []*node.Node[T, ID]) bool {
		for i, n := range val {
			switch {
			case !want[n]:
				err = fmt.Errorf("the ring holds %v, which is not in the pool or holds two points", n.Key)
			case pos[i] != uint32(affinity.KeyHash(n.Key)>>32):
				err = fmt.Errorf("%v is at %#x, its key hashes to %#x", n.Key, pos[i], affinity.KeyHash(n.Key)>>32)
			case prev != nil && affinity.KeyHash(prev.Key) >= affinity.KeyHash(n.Key):
				err = fmt.Errorf("%v comes after %v on the ring", n.Key, prev.Key)
			}
			delete(want, n)
			prev = n
		}
		return err == nil
	})
	if err == nil && len(want) > 0 {
		err = fmt.Errorf("the ring misses %d resources of the pool", len(want))
	}
	return err
}

// points returns the ring's points in order.
func points[T any, ID comparable](r *ring.Ring[*node.Node[T, ID]]) ([]uint32, []*node.Node[T, ID]) {
	var ps []uint32
	var vs []*node.Node[T, ID]
	r.Window(0, r.Len(), func(pos []uint32, val []*node.Node[T, ID]) bool {
		ps, vs = append(ps, pos...), append(vs, val...)
		return true
	})
	return ps, vs
}

// shares returns each resource's share of all identifiers, as a multiple
// of its fair share, when identifiers are many: those that hash into the
// arc of the ring that ends at point j have as their window the w points
// from j, and take each with probability 1/w (rendezvous). So a
// resource's share is the mean of the w arcs that end at it and the w-1
// points before it.
func shares[T any, ID comparable](r *ring.Ring[*node.Node[T, ID]]) map[*node.Node[T, ID]]float64 {
	pos, val := points(r)
	n := len(pos)
	w := min(affinity.Window, n)
	arc := make([]float64, n) // arc[j] ends at point j, over the ring's length
	for j := range pos {
		arc[j] = float64(pos[j]-pos[(j+n-1)%n]) / (1 << 32)
	}
	if n == 1 {
		arc[0] = 1
	}
	out := make(map[*node.Node[T, ID]]float64, n)
	sum := 0.0
	for j := n - w + 1; j < n; j++ {
		sum += arc[j]
	}
	for i := range pos {
		sum += arc[i]
		out[val[i]] = sum / float64(w) * float64(n)
		sum -= arc[(i-w+1+n)%n]
	}
	return out
}

// The busiest resource serves at most 1.25 times its fair share of many
// identifiers, and the idlest at least 0.75 times, at the sizes of pools
// users have.
func TestAffinitySharesAreEvenAtScale(t *testing.T) {
	for _, n := range []int{100, 10_000, 100_000} {
		s := keyPool(t, n, config.Shared)
		busiest, idlest := 0.0, math.Inf(1)
		total := 0.0
		for _, v := range shares(s.affinity.Built()) {
			busiest, idlest = max(busiest, v), min(idlest, v)
			total += v
		}
		t.Logf("%d resources: busiest %.3f, idlest %.3f of the fair share", n, busiest, idlest)
		if busiest > 1.25 || idlest < 0.75 || math.Abs(total-float64(n)) > 1e-6*float64(n) {
			t.Errorf("%d resources: shares from %.3f to %.3f of the fair share, summing to %.3f resources", n, idlest, busiest, total)
		}
	}
}

// Identifiers pick among their window as if each point were as likely as
// any other (rendezvous), so that the shares above are what resources
// get: the counts of identifiers per resource are off the shares by no
// more than chance allows (a chi-square statistic near one per resource).
func TestAffinityIdentifiersFollowTheShares(t *testing.T) {
	const resources, identifiers = 2000, 40_000
	s := keyPool(t, resources, config.Shared)
	r := s.affinity.Built()
	want := shares(r)
	got := map[*node.Node[string, string]]int{}
	for i := range identifiers {
		n, _ := affinity.Candidate(r, acquire.HashIdentifier(acquire.StringIdentifier(fmt.Sprint("user-", i))), ^uint64(0))
		got[n]++
	}
	chi := 0.0
	for n, share := range want {
		e := share * identifiers / resources
		chi += (float64(got[n]) - e) * (float64(got[n]) - e) / e
	}
	if chi /= resources; chi < 0.85 || chi > 1.15 {
		t.Fatalf("chi-square %.3f per resource, want about 1", chi)
	}
}

// An identifier's fallback order is its window by decreasing rank: each
// candidate ranks below the one before, and every resource of the window
// comes once.
func TestAffinityFallbackOrderCoversTheWindowOnce(t *testing.T) {
	for _, n := range []int{3, 2000} {
		s := keyPool(t, n, config.Shared)
		r := s.affinity.Built()
		for i := range 20 {
			h := acquire.HashIdentifier(acquire.StringIdentifier(fmt.Sprint("user-", i)))
			seen := map[*node.Node[string, string]]bool{}
			for below := ^uint64(0); ; {
				c, k := affinity.Candidate(r, h, below)
				if c == nil {
					break
				}
				if k >= below || seen[c] {
					t.Fatalf("user-%d: %v at rank %#x after rank %#x (seen: %v)", i, c.Key, k, below, seen[c])
				}
				seen[c], below = true, k
			}
			if len(seen) != min(n, affinity.Window) {
				t.Fatalf("user-%d: %d candidates in a window of %d", i, len(seen), min(n, affinity.Window))
			}
		}
	}
}

// One goroutine removes and adds resources back while others acquire and
// release by affinity (exclusive, so that they fall back along their
// order): at the end the state model holds and the ring holds exactly
// the resources present.
func TestAffinityDuringChurnKeepsTheRingTrue(t *testing.T) {
	s := keyPool(t, 3000, config.Exclusive)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(26, 3))
		for i := 0; i < 400; i++ {
			k := fmt.Sprint("r", r.IntN(3200))
			if i%2 == 0 {
				_ = s.Remove(k)
			} else {
				_ = s.Add(k)
			}
			if i%50 == 0 { // a batch, some of whose keys are taken
				_ = s.BatchAdd([]string{fmt.Sprint("b", i), fmt.Sprint("r", r.IntN(3200))})
			}
		}
		close(stop)
	}()
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v, err := s.AcquireByAffinity(acquire.StringIdentifier(fmt.Sprint("user-", g*1000+i%40)))
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Release(v); err != nil && !errors.Is(err, crserrors.ErrResourceNotFound) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if err := s.checkAffinity(); err != nil {
		t.Fatal(err)
	}
}
