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
)

// clusterNode is one redis-server of a test's own Redis Cluster.
type clusterNode struct {
	srv *redisServer
	c   *redis.Client
	id  string
}

// startClusterNode starts a redis-server with cluster mode on, on a free
// loopback port, stopped at the end of the test.
func startClusterNode(t *testing.T) *clusterNode {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := launch(port, t.TempDir(), "--cluster-enabled", "yes", "--cluster-node-timeout", "5000",
		"--repl-diskless-sync-delay", "0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	c := clientOf(t, srv.addr)
	id, err := c.ClusterMyID(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return &clusterNode{srv: srv, c: c, id: id}
}

// ownCluster starts a Redis Cluster of n masters, each with an equal
// share of the slots (as redis-cli --cluster create does, with the
// commands it sends), and waits (bounded) until every node sees it whole.
func ownCluster(t *testing.T, n int) []*clusterNode {
	t.Helper()
	needServerBinary(t)
	ctx := context.Background()
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		nodes[i] = startClusterNode(t)
		lo, hi := slotShare(i, n)
		if err := nodes[i].c.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes[1:] {
		meet(t, nodes[0], node)
	}
	waitCluster(t, nodes, n)
	return nodes
}

// slotShare is the range of slots of master i of n.
func slotShare(i, n int) (lo, hi int) {
	return i * 16384 / n, (i+1)*16384/n - 1
}

func meet(t *testing.T, a, b *clusterNode) {
	t.Helper()
	if err := a.c.ClusterMeet(context.Background(), "127.0.0.1", strconv.Itoa(b.srv.port)).Err(); err != nil {
		t.Fatal(err)
	}
}

// waitCluster polls until every node reports the cluster ok with known
// nodes.
func waitCluster(t *testing.T, nodes []*clusterNode, known int) {
	t.Helper()
	want := []string{"cluster_state:ok", fmt.Sprintf("cluster_known_nodes:%d", known)}
	for deadline := time.Now().Add(30 * time.Second); ; {
		ok := true
		var info string
		for _, node := range nodes {
			info = node.c.ClusterInfo(context.Background()).Val()
			for _, w := range want {
				ok = ok && strings.Contains(info, w)
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not form: %s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clusterClient(t *testing.T, nodes []*clusterNode) *redis.ClusterClient {
	var addrs []string
	for _, node := range nodes {
		addrs = append(addrs, node.srv.addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// poolOn returns a pool name whose keys live on node: its slot is in the
// node's share.
func poolOn(t *testing.T, nodes []*clusterNode, i int) string {
	t.Helper()
	for k := 0; k < 1000; k++ {
		name := fmt.Sprintf("%s-%d", poolName(t), k)
		slot, err := nodes[0].c.ClusterKeySlot(context.Background(), "{"+name+"}:res").Result()
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := slotShare(i, len(nodes)); int(slot) >= lo && int(slot) <= hi {
			return name
		}
	}
	t.Fatalf("no pool name with a slot on node %d", i)
	return ""
}

// On a Redis Cluster of three masters, every operation works for pools
// on each master, and a release in one client wakes a waiter in another
// (the wake-up goes through the cluster bus).
func TestEveryOperationWorksOnAClusterOfThreeMasters(t *testing.T) {
	nodes := ownCluster(t, 3)
	for i := range nodes {
		t.Run(fmt.Sprintf("master%d", i), func(t *testing.T) {
			c, other := clusterClient(t, nodes), clusterClient(t, nodes)
			name := poolOn(t, nodes, i)
			p := newPool(t, c, Options{Name: name})
			q := newPool(t, other, Options{Name: name})
			ctx := context.Background()
			if err := p.Sync(ctx, []Resource{{ID: "a", Capacity: 2}, {ID: "b", Priority: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := p.Add(ctx, Resource{ID: "c", Priority: 2}); err != nil {
				t.Fatal(err)
			}
			if err := p.Update(ctx, "c", 3); err != nil {
				t.Fatal(err)
			}
			if err := p.Exclude(ctx, "b"); err != nil {
				t.Fatal(err)
			}
			if err := p.Suspend(ctx, "c", time.Hour); err != nil {
				t.Fatal(err)
			}
			l1, l2 := mustAcquire(t, p), mustAcquire(t, p)
			if l1.ID != "a" || l2.ID != "a" || l2.Token <= l1.Token {
				t.Fatalf("leases %s #%d, %s #%d", l1.ID, l1.Token, l2.ID, l2.Token)
			}
			if err := l1.Extend(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			startHub(t, q)
			parked := parkings(q)
			waiting := acquireAsync(q)
			receive(t, parked, "the waiter to block")
			if err := l1.Cooldown(ctx, time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := p.Include(ctx, "b"); err != nil { // frees b: wakes q's waiter
				t.Fatal(err)
			}
			r := <-waiting
			if r.err != nil || r.lease.ID != "b" {
				t.Fatalf("waiter in another client: %v, %v", r.lease, r.err)
			}
			mustRelease(t, r.lease)
			if s := stats(t, p); s.Resources != 3 || s.Leases != 1 || s.Suspended != 2 {
				t.Fatalf("stats %+v", s)
			}
			checkInvariants(t, c, p)
			if err := p.Remove(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			mustRelease(t, l2)
			if err := p.Sync(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := p.TryAcquire(ctx); !errors.Is(err, ErrPoolEmpty) {
				t.Fatalf("TryAcquire after Sync(nil): %v", err)
			}
		})
	}
}

// WAIT goes to the master of the pool's slot: with a replica there, a
// grant waits for it; a pool on another master, which has none, gets
// ErrNotReplicated and holds nothing.
func TestWaitReplicasOnAClusterWaitsForTheSlotsMastersReplica(t *testing.T) {
	nodes := ownCluster(t, 3)
	replica := startClusterNode(t)
	meet(t, nodes[0], replica)
	waitCluster(t, append(nodes, replica), 4)
	ctx := context.Background()
	if err := replica.c.ClusterReplicate(ctx, nodes[1].id).Err(); err != nil {
		t.Fatal(err)
	}
	waitReplicaLinked(t, nodes[1].c, replica.c)
	c := clusterClient(t, nodes)
	p := newPool(t, c, Options{Name: poolOn(t, nodes, 1), WaitReplicas: 1, WaitTimeout: 30 * time.Second})
	add(t, p, Resource{ID: "a"})
	l := mustAcquire(t, p)
	// A cluster replica answers reads on a READONLY connection.
	conn := replica.c.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.ZScore(ctx, p.keys[2], l.member).Err(); err != nil {
		t.Fatalf("the grant returned before the slot's replica had it: %v", err)
	}
	mustRelease(t, l)

	alone := newPool(t, c, Options{Name: poolOn(t, nodes, 2), WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	add(t, alone, Resource{ID: "a"})
	if l, err := alone.TryAcquire(ctx); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("TryAcquire on a master without replicas: %v, %v; want ErrNotReplicated", l, err)
	}
	alone.bg.Wait()
	if s := stats(t, alone); s.Leases != 0 || s.Available != 1 {
		t.Fatalf("the refused grant is still out: %+v", s)
	}
}

// moveSlot moves slot, with its keys, from master from to master to, as
// redis-cli --cluster reshard does, and tells every node.
func moveSlot(t *testing.T, nodes []*clusterNode, slot int, from, to *clusterNode) {
	t.Helper()
	ctx := context.Background()
	if err := to.c.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.id).Err(); err != nil {
		t.Fatal(err)
	}
	if err := from.c.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.id).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		keys, err := from.c.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", to.srv.port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := from.c.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		if err := node.c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.id).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// After a reshard moves the pool's slot to a master that has not loaded
// the scripts, the pool's next call loads them there and succeeds: the
// client learns where the slot went from the MOVED reply, not before.
func TestAPoolWhoseSlotMovesLoadsItsScriptsOnTheNewMaster(t *testing.T) {
	nodes := ownCluster(t, 3)
	ctx := context.Background()
	c := clusterClient(t, nodes)
	p := newPool(t, c, Options{Name: poolOn(t, nodes, 0)})
	add(t, p, Resource{ID: "a"}) // loads the scripts on master 0
	mustRelease(t, mustAcquire(t, p))
	slot, err := nodes[0].c.ClusterKeySlot(ctx, p.keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	moveSlot(t, nodes, int(slot), nodes[0], nodes[1])
	l, err := p.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("the first acquire after the slot moved: %v", err)
	}
	mustRelease(t, l)
	checkInvariants(t, c, p)
}
