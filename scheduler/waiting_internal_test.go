package scheduler

import (
	"cmp"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/waiting"
)

type prio struct {
	key string
	p   int
}

// gate is a comparator that, once armed, stops in its next call until
// released: a way to hold an operation inside a shard's lock without
// timing.
type gate struct {
	armed           atomic.Bool
	inside, proceed chan struct{}
}

func newGate() *gate { return &gate{inside: make(chan struct{}), proceed: make(chan struct{})} }

func (g *gate) compare(a, b *prio) int {
	if g != nil && g.armed.CompareAndSwap(true, false) {
		close(g.inside)
		<-g.proceed
	}
	return cmp.Compare(a.p, b.p)
}

// newGlobal returns an exclusive GlobalOrder scheduler of prio values
// ordered by g (nil: no gate).
func newGlobal(t *testing.T, heaps int, g *gate) *Scheduler[*prio, string] {
	t.Helper()
	s, err := New(config.Config[*prio, string]{
		HeapCount:     heaps,
		AcquirePolicy: config.Exclusive,
		Ordering:      config.GlobalOrder,
		Comparator:    g.compare,
		KeyFunc:       func(v *prio) string { return v.key },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// queueing holds a waiting caller on either side of its queueing: each
// in channel closes when it gets there, and it goes on when the matching
// out channel is closed.
type queueing struct {
	inSearch, queue, inQueue, check chan struct{}
}

func holdQueueing(s *Scheduler[*prio, string]) *queueing {
	q := &queueing{make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})}
	s.setHooks(hooks{waiting: func(at waiting.Step) {
		switch at {
		case waiting.BeforeQueue:
			close(q.inSearch)
			<-q.queue
		case waiting.Queued:
			close(q.inQueue)
			<-q.check
		}
	}})
	return q
}

// acquireInBackground starts AcquireContext and returns where its value
// will arrive.
func acquireInBackground(t *testing.T, s *Scheduler[*prio, string], ctx context.Context) <-chan *prio {
	got := make(chan *prio, 1)
	go func() {
		v, err := s.AcquireContext(ctx)
		if err != nil && ctx.Err() == nil {
			t.Error(err)
		}
		got <- v
	}()
	return got
}

// Under GlobalOrder a giver serves a waiter the best top it can read, and
// cannot read a shard that another caller is changing (waiting for that
// shard's lock while holding its own could deadlock). A waiter past its
// check for an active resource is never queued beside a resource that
// was visible before, so for it the giver's best is the best; a waiter
// between queueing and that check may be, and was served the giver's
// worse resource (finding 8's narrow case in docs/TESTING.md). Now a
// giver that cannot read every shard serves only committed waiters and
// tells the others to search again. The hook holds the waiter on either
// side of its queueing; a gated comparator holds an Update in the better
// shard.
func TestGlobalOrderNeverServesAQueueingWaiterWorseThanAShardBeingChanged(t *testing.T) {
	g := newGate()
	s := newGlobal(t, 2, g)
	// Shards fill in rotation: worse and filler in shard 0, better and
	// other in shard 1.
	for _, r := range []*prio{{"worse", 5}, {"better", 1}, {"filler", 9}, {"other", 3}} {
		if err := s.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	for key, shard := range map[string]int{"worse": 0, "better": 1, "other": 1} {
		if n, _ := s.nodes.Get(key); int(n.Shard) != shard {
			t.Fatalf("%s went to shard %d, not %d", key, n.Shard, shard)
		}
	}
	for _, key := range []string{"worse", "better", "other"} {
		if err := s.Exclude(key); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove("filler"); err != nil {
		t.Fatal(err)
	}

	q := holdQueueing(s)
	got := acquireInBackground(t, s, context.Background())
	<-q.inSearch // the caller found nothing
	// better and other become available before it queues: no giver
	// serves it, and its check after queueing would see them.
	if err := s.Include("better"); err != nil {
		t.Fatal(err)
	}
	if err := s.Include("other"); err != nil {
		t.Fatal(err)
	}
	close(q.queue)
	<-q.inQueue
	// Shard 1 is being changed (an Update of other, held in its sift),
	// and worse comes back in shard 0 while the caller sits between
	// queueing and its check.
	g.armed.Store(true)
	updated := make(chan error, 1)
	go func() { updated <- s.Update(&prio{"other", 2}) }()
	<-g.inside
	if err := s.Include("worse"); err != nil {
		t.Fatal(err)
	}
	close(g.proceed)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	close(q.check)
	if v := <-got; v == nil || v.key != "better" {
		t.Fatalf("the waiter got %v; better (priority 1) was available throughout", v)
	}
}

// A giver that cannot read every shard passes over a waiter that has not
// committed to waiting and tells it to search again; the waiter may
// already have checked for an active resource (before the giver's became
// visible) and found none. It must then search, not wait: nobody will
// serve it, and the giver's resource would idle beside it. Here a
// BatchAdd, held in its comparator, keeps two shards unreadable while an
// Include in the third passes over the waiter, held between its check
// and its commit.
func TestAWaiterToldToSearchAgainDoesNotWait(t *testing.T) {
	g := newGate()
	s := newGlobal(t, 3, g)
	if err := s.Add(&prio{"mine", 5}); err != nil { // shard 0
		t.Fatal(err)
	}
	if err := s.Exclude("mine"); err != nil {
		t.Fatal(err)
	}
	inCheck, commit := make(chan struct{}), make(chan struct{})
	s.setHooks(hooks{waiting: func(at waiting.Step) {
		if at == waiting.Checked {
			close(inCheck)
			<-commit
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireInBackground(t, s, ctx)
	<-inCheck // queued, found nothing active, not yet committed
	g.armed.Store(true)
	batched := make(chan error, 1)
	go func() { batched <- s.BatchAdd([]*prio{{"one", 1}, {"two", 2}}) }() // shards 1 and 2
	<-g.inside                                                             // serving, shards 1 and 2 locked and mid-change
	if err := s.Include("mine"); err != nil {
		t.Fatal(err)
	}
	close(g.proceed)
	if err := <-batched; err != nil {
		t.Fatal(err)
	}
	for key, shard := range map[string]int{"mine": 0, "one": 1, "two": 2} {
		if n, _ := s.nodes.Get(key); int(n.Shard) != shard {
			t.Fatalf("%s went to shard %d, not %d", key, n.Shard, shard)
		}
	}
	close(commit)
	for i := 0; ; i++ {
		if s.room.Len() == 0 {
			break
		}
		if i == 10000 {
			t.Fatal("the waiter told to search again waits beside three available resources")
		}
		runtime.Gosched()
	}
	cancel()
	<-got
}

// Under GlobalOrder a BatchAdd serves a committed waiter from the shard
// whose top is best, ties to the lower shard, before it returns.
func TestGlobalOrderBatchServesACommittedWaiterTheBestOfTheBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch []*prio // one a shard, from shard 0
		want  string
	}{
		{"best in the first shard", []*prio{{"better", 1}, {"worse", 5}}, "better"},
		{"best in the second shard", []*prio{{"worse", 5}, {"better", 1}}, "better"},
		{"a tie", []*prio{{"lower", 1}, {"higher", 1}}, "lower"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newGlobal(t, 2, nil)
			committed := make(chan struct{})
			s.setHooks(hooks{waiting: func(at waiting.Step) {
				if at == waiting.Committed {
					close(committed)
				}
			}})
			got := acquireInBackground(t, s, context.Background())
			<-committed
			if err := s.BatchAdd(tc.batch); err != nil {
				t.Fatal(err)
			}
			if n := s.room.Len(); n != 0 {
				t.Fatalf("%d waiters left after the batch", n)
			}
			if v := <-got; v.key != tc.want {
				t.Fatalf("the waiter got %s, want %s", v.key, tc.want)
			}
		})
	}
}

// Under GlobalOrder a giver serves a waiter from the shard whose
// published top is strictly better than its own, locking it without
// waiting; on a tie it serves from its own shard. The waiter is held just
// after queueing, so that the resource in the other shard, made available
// while it was searching, is visible while it waits to be served.
func TestGlobalOrderGiverServesFromAShardWithABetterTop(t *testing.T) {
	for _, tc := range []struct {
		name         string
		mine, theirs int // priorities in the giver's shard (0) and the other (1)
		want         string
	}{
		{"better elsewhere", 5, 1, "theirs"},
		{"a tie", 1, 1, "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newGlobal(t, 2, nil)
			for _, r := range []*prio{{"mine", tc.mine}, {"theirs", tc.theirs}} { // shards 0 and 1
				if err := s.Add(r); err != nil {
					t.Fatal(err)
				}
				if err := s.Exclude(r.key); err != nil {
					t.Fatal(err)
				}
			}
			q := holdQueueing(s)
			got := acquireInBackground(t, s, context.Background())
			<-q.inSearch
			if err := s.Include("theirs"); err != nil { // nobody queued: nobody served
				t.Fatal(err)
			}
			close(q.queue)
			<-q.inQueue
			if err := s.Include("mine"); err != nil { // the giver, in shard 0
				t.Fatal(err)
			}
			if n := s.room.Len(); n != 0 {
				t.Fatalf("%d waiters left after the giver served", n)
			}
			close(q.check)
			if v := <-got; v.key != tc.want {
				t.Fatalf("the waiter got %s (priority %d), want %s", v.key, v.p, tc.want)
			}
		})
	}
}

// An exclusive Acquire of the top leaves the heap unsorted until the next
// operation on the shard (see shard.take), and a Release of that resource
// may find it so. One that rests the resource instead of putting it back
// must sort the heap before it serves a waiter from it: a waiter between
// queueing and its check is served from the top, which until then is the
// node moved there from the end of the heap.
func TestARestingReleaseServesAQueueingWaiterTheBest(t *testing.T) {
	s, err := New(config.Config[*prio, string]{
		HeapCount:       1,
		AcquirePolicy:   config.Exclusive,
		Comparator:      func(a, b *prio) int { return cmp.Compare(a.p, b.p) },
		KeyFunc:         func(v *prio) string { return v.key },
		Clock:           fakeclock.New(),
		ReleaseCooldown: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	keys := []string{"a", "b", "c", "z"}
	for i, key := range keys {
		if err := s.Add(&prio{key, []int{1, 2, 3, 9}[i]}); err != nil {
			t.Fatal(err)
		}
		if err := s.Exclude(key); err != nil {
			t.Fatal(err)
		}
	}
	q := holdQueueing(s)
	got := acquireInBackground(t, s, context.Background())
	<-q.inSearch // the caller found nothing
	for _, key := range keys {
		if err := s.Include(key); err != nil {
			t.Fatal(err)
		}
	}
	close(q.queue)
	<-q.inQueue
	if v, err := s.Acquire(); err != nil || v.key != "a" {
		t.Fatalf("Acquire = %v, %v; want a", v, err)
	}
	if err := s.Release("a"); err != nil { // a rests a minute
		t.Fatal(err)
	}
	close(q.check)
	if v := <-got; v == nil || v.key != "b" {
		t.Fatalf("the waiter got %v; b (priority 2) was the best available", v)
	}
}
