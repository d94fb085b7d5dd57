package redispool

import (
	"context"
	"strconv"
	"testing"

	"github.com/crsched/crs/config"
)

// perSecond is a limit of 86,400 units a day, a unit a second, counted
// at the provider's admission when admission is set.
func perSecond(name string, admission bool) config.Limit {
	return config.Limit{Name: name, Max: 86_400, Per: day, Admission: admission}
}

// backdateBuckets moves the last refill of resource id's buckets ms back, as
// if ms had passed since: Redis time cannot be faked, so a test of a
// refill moves the bucket instead of the clock.
func backdateBuckets(t *testing.T, p *Pool, id string, ms int64) {
	t.Helper()
	ctx := context.Background()
	v, err := p.client.HGet(ctx, p.keys[0], "r"+id).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseResource(v)
	if err != nil {
		t.Fatal(err)
	}
	v = bucketTime.ReplaceAllString(v, " t"+strconv.FormatInt(r.bucketTime-ms, 10))
	if err := p.client.HSet(ctx, p.keys[0], "r"+id, v).Err(); err != nil {
		t.Fatal(err)
	}
}

// A bucket of a limit counted at admission that a grant takes from full
// refills only from the next answer on the resource, from any process
// of the pool, whichever of Settle, Observe or Learn brings it; a plain
// bucket refills from the grant.
func TestALimitCountedAtAdmissionRefillsFromTheAnswer(t *testing.T) {
	ctx := context.Background()
	answers := map[string]func(*Lease) error{
		"settle":  func(l *Lease) error { return l.Settle(ctx, config.Cost{"tokens": 300}) },
		"observe": func(l *Lease) error { return l.Observe(ctx, "tokens", 86_200, 0) },
		"learn":   func(l *Lease) error { return l.Learn(ctx, "tokens", 86_400) },
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			c := newClient(t)
			p := newPool(t, c, Options{})
			other := newPool(t, c, Options{Name: p.name})
			add(t, p, Resource{ID: "a", Limits: []config.Limit{perSecond("tokens", true), perSecond("requests", false)}})
			l, err := tryCost(t, other, config.Cost{"tokens": 300, "requests": 300})
			if err != nil {
				t.Fatal(err)
			}
			backdateBuckets(t, p, "a", 60_000)
			wantRemaining(t, p, "a", map[string]int64{"tokens": 86_100, "requests": 86_160})
			if err := answer(l); err != nil {
				t.Fatal(err)
			}
			wantRemaining(t, p, "a", map[string]int64{"tokens": 86_100, "requests": 86_160})
			backdateBuckets(t, p, "a", 60_000)
			wantRemaining(t, p, "a", map[string]int64{"tokens": 86_160, "requests": 86_220})
			mustRelease(t, l)
			checkInvariants(t, c, p)
		})
	}
}

// Admission is part of a resource's limits: Sync sets and clears it,
// and a bucket held for an answer refills at once when Sync clears it.
func TestSyncCarriesAdmission(t *testing.T) {
	c := newClient(t)
	p := newPool(t, c, Options{})
	ctx := context.Background()
	plain := Resource{ID: "a", Limits: []config.Limit{perSecond("tokens", false)}}
	counted := Resource{ID: "a", Limits: []config.Limit{perSecond("tokens", true)}}
	add(t, p, plain)
	if err := p.Sync(ctx, []Resource{counted}); err != nil {
		t.Fatal(err)
	}
	l, err := tryCost(t, p, config.Cost{"tokens": 300})
	if err != nil {
		t.Fatal(err)
	}
	backdateBuckets(t, p, "a", 60_000)
	wantRemaining(t, p, "a", map[string]int64{"tokens": 86_100})
	checkInvariants(t, c, p)
	if err := p.Sync(ctx, []Resource{plain}); err != nil {
		t.Fatal(err)
	}
	backdateBuckets(t, p, "a", 60_000)
	wantRemaining(t, p, "a", map[string]int64{"tokens": 86_160})
	mustRelease(t, l)
	checkInvariants(t, c, p)
}
