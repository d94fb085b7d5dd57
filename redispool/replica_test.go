package redispool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

// ownReplica starts a redis-server of the test's own as a replica of
// primary (loopback), and waits until the primary counts it.
func ownReplica(t testing.TB, primary *redisServer) *redisServer {
	t.Helper()
	syncAtOnce(t, primary)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := launch(port, t.TempDir(), "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	waitReplicaLinked(t, clientOf(t, primary.addr), clientOf(t, srv.addr))
	return srv
}

// syncAtOnce makes primary send a new replica its data at once, not
// after the default 5 s it waits for more replicas to share the sync.
func syncAtOnce(t testing.TB, primary *redisServer) {
	t.Helper()
	if err := clientOf(t, primary.addr).ConfigSet(context.Background(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
}

// waitReplicaLinked polls (bounded) until the replica's link to its
// primary is up and the primary has received an acknowledgement from it.
func waitReplicaLinked(t testing.TB, primary, replica *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; {
		link := replica.Info(ctx, "replication").Val()
		acked, _ := primary.Wait(ctx, 1, 10*time.Millisecond).Result()
		if strings.Contains(link, "master_link_status:up") && acked == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not link to its primary: %s", link)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// replicaHasLease reports whether the replica's copy of p has the lease.
func replicaHasLease(t *testing.T, replica redis.UniversalClient, p *Pool, l *Lease) bool {
	t.Helper()
	err := replica.ZScore(context.Background(), p.keys[2], l.member).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return err == nil
}

func TestWaitReplicasIsCheckedByNew(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := New(c, Options{Name: "p", WaitReplicas: -1}); !errors.Is(err, ErrInvalidReplicas) {
		t.Errorf("WaitReplicas -1: %v, want ErrInvalidReplicas", err)
	}
	if _, err := New(c, Options{Name: "p", WaitReplicas: 1, WaitTimeout: time.Microsecond}); !errors.Is(err, crserrors.ErrInvalidDuration) {
		t.Errorf("WaitTimeout 1µs: %v, want ErrInvalidDuration", err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := New(ring, Options{Name: "p", WaitReplicas: 1}); !errors.Is(err, ErrInvalidReplicas) {
		t.Errorf("WaitReplicas with a Ring: %v, want ErrInvalidReplicas", err)
	}
	if _, err := New(ring, Options{Name: "p"}); err != nil {
		t.Errorf("a Ring without WaitReplicas: %v", err)
	}
}

func TestAGrantAndAnExtendWaitForTheReplica(t *testing.T) {
	primary := ownServer(t)
	replica := ownReplica(t, primary)
	c, hook := hooked(t, primary.addr)
	rc := clientOf(t, replica.addr)
	p := newPool(t, c, Options{WaitReplicas: 1, WaitTimeout: 30 * time.Second})
	add(t, p, Resource{ID: "a"})
	loadScripts(t, c)
	n := hook.count()
	l := mustAcquire(t, p)
	// WAIT returned: the replica has the lease, at once.
	if !replicaHasLease(t, rc, p, l) {
		t.Fatal("Acquire returned before the replica had the lease")
	}
	if got := hook.since(n); !equal(got, []string{"evalsha", "wait"}) {
		t.Fatalf("a grant sent %v, want EVALSHA then WAIT", got)
	}
	ctx := context.Background()
	before := serverMillis(t, c)
	n = hook.count()
	if err := l.Extend(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	score, err := rc.ZScore(ctx, p.keys[2], l.member).Result()
	if err != nil || int64(score) < before+60*60*1000 {
		t.Fatalf("the replica's deadline after Extend: %v, %v", score, err)
	}
	// Neither an empty try nor a release waits.
	mustRelease(t, l)
	if err := p.Exclude(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatal(err)
	}
	if got := hook.since(n); !equal(got, []string{"evalsha", "wait", "evalsha", "evalsha", "evalsha"}) {
		t.Fatalf("extend, release, exclude, empty try sent %v", got)
	}
}

// A replica that does not acknowledge (SIGSTOP) makes a grant fail with
// ErrNotReplicated, holding nothing, the lease given back; an Extend
// fails the same way and keeps the lease's Deadline; once the replica
// is back, the same Extend succeeds.
func TestAStoppedReplicaFailsTheGrantAndItIsGivenBack(t *testing.T) {
	primary := ownServer(t)
	replica := ownReplica(t, primary)
	c := clientOf(t, primary.addr)
	patient := newPool(t, c, Options{WaitReplicas: 1, WaitTimeout: 30 * time.Second})
	// The same pool, through a handle that waits 100 ms for the replica;
	// held is moved to it, so that its Extend does too.
	p := newPool(t, c, Options{Name: patient.name, WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	add(t, p, Resource{ID: "a", Capacity: 2})
	granted := mustAcquire(t, patient)
	held := &Lease{ID: granted.ID, Token: granted.Token, pool: p, member: granted.member, deadline: granted.deadline}
	deadline := held.Deadline()
	resume := stopServer(t, replica)

	l, err := p.TryAcquire(ctx)
	if !errors.Is(err, ErrNotReplicated) || l != nil {
		t.Fatalf("TryAcquire with the replica stopped: %v, %v; want ErrNotReplicated", l, err)
	}
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if l, err := p.Acquire(bounded); !errors.Is(err, ErrNotReplicated) || l != nil {
		t.Fatalf("Acquire with the replica stopped: %v, %v; want ErrNotReplicated", l, err)
	}
	if err := held.Extend(ctx, time.Hour); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Extend with the replica stopped: %v, want ErrNotReplicated", err)
	}
	if !held.Deadline().Equal(deadline) {
		t.Fatalf("Deadline moved to %v after an Extend that was not replicated", held.Deadline())
	}
	// The grants were given back (in the background: a fresh handle
	// sees them once this one's give-backs are done).
	_ = p.Close()
	if s := stats(t, newPool(t, c, Options{Name: p.name})); s.Leases != 1 || s.Available != 1 {
		t.Fatalf("after the refused grants: %+v, want only the first lease", s)
	}
	checkInvariants(t, c, p)

	resume()
	// The same Extend, repeated until the resumed replica acknowledges
	// within the 100 ms (it has to catch up first).
	for limit := time.Now().Add(30 * time.Second); ; {
		err := held.Extend(ctx, time.Hour)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotReplicated) || time.Now().After(limit) {
			t.Fatalf("the same Extend once the replica is back: %v", err)
		}
	}
	if !held.Deadline().After(deadline.Add(50 * time.Minute)) {
		t.Fatalf("Deadline %v after the Extend", held.Deadline())
	}
	if !replicaHasLease(t, clientOf(t, replica.addr), p, held) {
		t.Fatal("the replica lacks the lease")
	}
	mustRelease(t, held)
}

// A replica promoted after the primary dies (REPLICAOF NO ONE, clients
// pointed at it) has every grant that waited for it: the lease is still
// held, so no second holder gets the capacity-1 resource, the holder
// can release it there, and tokens go on from the last one.
func TestAPromotedReplicaKeepsTheLeasesThatWaitedForIt(t *testing.T) {
	primary := ownServer(t)
	replica := ownReplica(t, primary)
	c := clientOf(t, primary.addr)
	p := newPool(t, c, Options{WaitReplicas: 1, WaitTimeout: 30 * time.Second, LeaseTTL: time.Hour})
	ctx := context.Background()
	add(t, p, Resource{ID: "a"}, Resource{ID: "b", Priority: 1})
	held := mustAcquire(t, p)
	// The promoted replica's clock is "behind" the last token by a day.
	ahead := held.Token + clockAhead
	setLastToken(t, p, ahead)
	last := mustAcquire(t, p) // waits for the replica, and so the SET before it
	if last.Token != ahead+1 {
		t.Fatalf("token %d, want %d", last.Token, ahead+1)
	}

	if err := primary.cmd.Process.Kill(); err != nil { // SIGKILL: no goodbye
		t.Fatal(err)
	}
	<-primary.exited
	rc := clientOf(t, replica.addr)
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	promoted := newPool(t, rc, Options{Name: p.name, WaitReplicas: 0})
	if l, err := promoted.TryAcquire(ctx); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("TryAcquire on the promoted replica: %v, %v; want both resources held", l, err)
	}
	for _, l := range []*Lease{held, last} {
		moved := &Lease{ID: l.ID, Token: l.Token, pool: promoted, member: l.member}
		if err := moved.Release(ctx); err != nil {
			t.Fatalf("Release of %s #%d on the promoted replica: %v", l.ID, l.Token, err)
		}
	}
	next := mustAcquire(t, promoted)
	if next.Token != ahead+2 {
		t.Fatalf("token %d on the promoted replica, want %d", next.Token, ahead+2)
	}
	mustRelease(t, next)
	checkInvariants(t, rc, promoted)
}

// The counterpart, without WaitReplicas: a replica that lags (here: cut
// off by a partition) is promoted without the last grant, and hands the
// capacity-1 resource to a second holder. It shows what WaitReplicas is
// for; the fencing token is what the guarded resource can still check.
func TestWithoutWaitReplicasAPromotedLaggingReplicaGrantsTwice(t *testing.T) {
	primary := ownServer(t)
	syncAtOnce(t, primary)
	px := startProxy(t, primary.addr)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	_, pxPort, _ := strings.Cut(px.addr(), ":")
	replica, err := launch(port, t.TempDir(), "--replicaof", "127.0.0.1", pxPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.stop)
	c := clientOf(t, primary.addr)
	rc := clientOf(t, replica.addr)
	waitReplicaLinked(t, c, rc)
	p := newPool(t, c, Options{LeaseTTL: time.Hour})
	add(t, p, Resource{ID: "a"})
	for limit := time.Now().Add(30 * time.Second); !rc.HExists(context.Background(), p.keys[0], "ra").Val(); {
		if time.Now().After(limit) {
			t.Fatal("the replica did not get the resource")
		}
		time.Sleep(5 * time.Millisecond)
	}
	px.partition()
	first := mustAcquire(t, p)
	if err := rc.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	promoted := newPool(t, rc, Options{Name: p.name})
	second, err := promoted.TryAcquire(context.Background())
	if err != nil {
		t.Fatalf("TryAcquire on the promoted lagging replica: %v (the grant reached it?)", err)
	}
	t.Logf("two holders of %s: #%d on the old primary, #%d on the promoted replica", first.ID, first.Token, second.Token)
	px.heal()
}

// A request sent again (its reply lost) is answered from the server's
// record, often on another connection than the first attempt's: WAIT
// there must still count the replicas that have the first attempt's
// writes, not only that connection's earlier ones. Here the resends'
// connection wrote before, the replica acknowledged that and was then
// stopped, and the first attempts came after: only a WAIT that covers
// them fails. (Redis 7.0 moves a connection's WAIT offset with every
// command it runs, so there this holds even without the scripts writing
// their answer again; they do for a server that counts only the
// connection's own writes.)
func TestAResentGrantOrExtendWaitsForItsFirstWrites(t *testing.T) {
	primary := ownServer(t)
	replica := ownReplica(t, primary)
	plain := newPool(t, clientOf(t, primary.addr), Options{})
	one := redis.NewClient(&redis.Options{Addr: primary.addr, PoolSize: 1}) // one connection
	t.Cleanup(func() { _ = one.Close() })
	waiting := newPool(t, one, Options{Name: plain.name, WaitReplicas: 1, WaitTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	add(t, plain, Resource{ID: "a", Capacity: 2})
	held := mustAcquire(t, plain) // and the scripts are loaded
	if err := one.Set(ctx, plain.keys[5]+"-test", 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := one.Wait(ctx, 1, 30*time.Second).Result(); n != 1 || err != nil {
		t.Fatalf("WAIT after a write: %d, %v", n, err)
	}
	stopServer(t, replica)

	request := newRequest()
	if status, _, err := plain.run(ctx, scriptAcquire, request, plain.ttlMs, 0, plain.proc, "", "0", "", ""); err != nil || status != statusOK {
		t.Fatalf("acquire: %d, %v", status, err)
	}
	if _, _, err := waiting.run(ctx, scriptAcquire, request, waiting.ttlMs, 0, waiting.proc, "", "0", "", ""); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("the resent acquire, its grant not on the stopped replica: %v, want ErrNotReplicated", err)
	}
	request = newRequest()
	if status, _, err := plain.run(ctx, scriptExtend, request, held.member, int64(60_000)); err != nil || status != statusOK {
		t.Fatalf("extend: %d, %v", status, err)
	}
	if _, _, err := waiting.run(ctx, scriptExtend, request, held.member, int64(60_000)); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("the resent extend, not on the stopped replica: %v, want ErrNotReplicated", err)
	}
}

// sentHook signals each command of a name as it is sent.
type sentHook struct {
	name string
	sent chan struct{}
}

func (h *sentHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sentHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), h.name) {
			select {
			case h.sent <- struct{}{}:
			default:
			}
		}
		return next(ctx, cmd)
	}
}

func (h *sentHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An Acquire whose ctx ends while its grant waits for a replica that
// does not answer returns at once, and the grant is given back when the
// WAIT ends.
func TestAnAcquireCancelledWhileWaitingForReplicasLosesNoLease(t *testing.T) {
	primary := ownServer(t)
	replica := ownReplica(t, primary)
	c := clientOf(t, primary.addr)
	waits := &sentHook{name: "wait", sent: make(chan struct{}, 1)}
	c.AddHook(waits)
	p := newPool(t, c, Options{WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond})
	add(t, p, Resource{ID: "a"})
	loadScripts(t, c)
	stopServer(t, replica)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		l, err := p.Acquire(ctx)
		if l != nil {
			err = fmt.Errorf("got a lease: %v, %v", l, err)
		}
		got <- err
	}()
	receive(t, waits.sent, "the WAIT to be sent")
	cancel()
	if err := returnsBeforeTheServer(t, got, "Acquire"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire cancelled during its WAIT: %v, want context.Canceled", err)
	}
	p.late.Wait() // the WAIT's end, and the give-back
	if s := stats(t, p); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("the grant whose caller left is still out: %+v", s)
	}
	checkInvariants(t, c, p)
}

// A waiter served by another's Release, with WaitReplicas, returns only
// once the replica has its lease: it picks the grant up with its
// request, and WAITs, rather than take the message's word.
func TestAQueuedWaiterReturnsOnlyOnceTheReplicaHasItsGrant(t *testing.T) {
	primary := ownServer(t)
	replica := ownReplica(t, primary)
	c, hook := hooked(t, primary.addr)
	rc := clientOf(t, replica.addr)
	opts := Options{WaitReplicas: 1, WaitTimeout: 30 * time.Second, RecheckInterval: time.Hour}
	p := newPool(t, c, opts)
	opts.Name = p.name
	other := newPool(t, clientOf(t, primary.addr), opts)
	add(t, p, Resource{ID: "a"})
	held := mustAcquire(t, other)
	parked := parkings(p)
	startHub(t, p)
	got := queueAsync(t, p, parked)
	n := hook.count()
	mustRelease(t, held)
	l := expectOnly(t, got)
	if !replicaHasLease(t, rc, p, l) {
		t.Fatal("Acquire returned before the replica had the lease")
	}
	if cmds := hook.since(n); !equal(cmds, []string{"evalsha", "wait"}) {
		t.Fatalf("the waiter sent %v after the grant, want EVALSHA then WAIT", cmds)
	}
	mustRelease(t, l)
}
