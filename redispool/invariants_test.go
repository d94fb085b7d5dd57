package redispool

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// rawResource is one resource as stored in {name}:res.
type rawResource struct {
	capacity, holders  int
	priority, suspEnd  string
	excluded, draining bool
	// The fields after the priority (lua/resource.lua): buckets, their
	// time, the end of a rest for them, health, the end of an ejection.
	buckets    []rawBucket
	bucketTime int64
	restEnd    int64
	ejectEnd   int64
	fullAt     int64 // when its buckets are full again, as listed
}

// rawBucket is one bucket of a resource: units whole units (negative:
// in debt) and rem of 1/per more; counted at admission, and held until
// an answer.
type rawBucket struct {
	name                       string // hex
	max, per, units, rem, born int64
	admission, held            bool
}

// rawState is every key of a pool, read in one MULTI/EXEC.
type rawState struct {
	resources map[string]*rawResource
	counters  map[string]string
	avail     []redis.Z
	leases    []redis.Z
	susp      []redis.Z
	req       map[string]string
	queue     []redis.Z
	profiles  map[string]string
}

// parseResource reads a resource's packed field (lua/resource.lua):
// capacity, holders, flag, end of suspension, priority.
func parseResource(v string) (*rawResource, error) {
	f := strings.Fields(v)
	if len(f) < 5 {
		return nil, fmt.Errorf("packed resource %q", v)
	}
	r := &rawResource{priority: f[4], excluded: f[2] == "x", draining: f[2] == "d"}
	var err1, err2 error
	r.capacity, err1 = strconv.Atoi(f[0])
	r.holders, err2 = strconv.Atoi(f[1])
	if f[3] != "0" {
		r.suspEnd = f[3]
	}
	if err1 != nil || err2 != nil || (f[2] != "-" && f[2] != "x" && f[2] != "d") {
		return nil, fmt.Errorf("packed resource %q", v)
	}
	for _, x := range f[5:] {
		var err error
		switch x[0] {
		case 'b':
			var b rawBucket
			level, flag, flagged := strings.Cut(x[1:], "/")
			b.admission, b.held = flag == "a" || flag == "h", flag == "h"
			parts := strings.Split(level, ",")
			if (len(parts) != 4 && len(parts) != 5) || flagged != b.admission {
				return nil, fmt.Errorf("bucket %q of %q", x, v)
			}
			b.name = parts[0]
			units, rem, hasRem := strings.Cut(parts[3], "+")
			parts[3] = units
			n := []*int64{&b.max, &b.per, &b.units, &b.born}
			for i, p := range parts[1:] {
				if *n[i], err = strconv.ParseInt(p, 10, 64); err != nil {
					return nil, fmt.Errorf("bucket %q of %q", x, v)
				}
			}
			if hasRem {
				if b.rem, err = strconv.ParseInt(rem, 10, 64); err != nil || b.rem < 1 {
					return nil, fmt.Errorf("bucket %q of %q", x, v)
				}
			}
			r.buckets = append(r.buckets, b)
		case 't':
			r.bucketTime, err = strconv.ParseInt(x[1:], 10, 64)
		case 'q':
			r.restEnd, err = strconv.ParseInt(x[1:], 10, 64)
		case 'e':
			r.ejectEnd, err = strconv.ParseInt(x[1:], 10, 64)
		case 'a':
			r.fullAt, err = strconv.ParseInt(x[1:], 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("field %q of %q", x, v)
		}
	}
	return r, nil
}

func readState(t testing.TB, c redis.UniversalClient, p *Pool) rawState {
	t.Helper()
	ctx := context.Background()
	var res, req, profiles *redis.MapStringStringCmd
	var avail, leases, susp, queue *redis.ZSliceCmd
	_, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		res = pipe.HGetAll(ctx, p.keys[0])
		avail = pipe.ZRangeWithScores(ctx, p.keys[1], 0, -1)
		leases = pipe.ZRangeWithScores(ctx, p.keys[2], 0, -1)
		susp = pipe.ZRangeWithScores(ctx, p.keys[3], 0, -1)
		req = pipe.HGetAll(ctx, p.keys[4])
		queue = pipe.ZRangeWithScores(ctx, p.keys[6], 0, -1)
		profiles = pipe.HGetAll(ctx, p.keys[7])
		return nil
	})
	if err != nil {
		t.Fatalf("reading the pool's keys: %v", err)
	}
	s := rawState{
		resources: map[string]*rawResource{},
		counters:  map[string]string{},
		avail:     avail.Val(),
		leases:    leases.Val(),
		susp:      susp.Val(),
		req:       req.Val(),
		queue:     queue.Val(),
		profiles:  profiles.Val(),
	}
	delete(s.req, "#h") // HASH_TABLE (lua/lifecycle.lua)
	for f, v := range res.Val() {
		if strings.HasPrefix(f, "#") {
			s.counters[f] = v
			continue
		}
		id, ok := strings.CutPrefix(f, "r")
		if !ok {
			t.Fatalf("unexpected field %q", f)
		}
		r, err := parseResource(v)
		if err != nil {
			t.Fatalf("field %q: %v", f, err)
		}
		s.resources[id] = r
	}
	return s
}

// checkInvariants fails the test unless the pool's keys agree with each
// other: counters with resources, the availability index with the
// resources that can be leased, leases with holders, suspensions with
// their index; and a pool with no resource has no keys (but the last
// token, which readState does not read).
func checkInvariants(t testing.TB, c redis.UniversalClient, p *Pool) {
	t.Helper()
	for _, problem := range invariantProblems(readState(t, c, p)) {
		t.Error(problem)
	}
}

func invariantProblems(s rawState) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	counter := func(name string) int {
		n, _ := strconv.Atoi(s.counters[name])
		return n
	}
	var live, excluded, draining, ejected, limited, budgeted int
	wantAvail := map[string]string{}    // member -> priority
	wantProfiles := map[string]string{} // see countProfile
	wantSusp := map[string]string{}
	for id, r := range s.resources {
		switch {
		case r.capacity < 1 || r.priority == "":
			fail("resource %q lacks capacity or priority: %+v", id, *r)
		case r.holders < 0 || r.holders > r.capacity:
			fail("resource %q has %d holders for capacity %d", id, r.holders, r.capacity)
		case r.draining && (r.holders == 0 || r.excluded || r.suspEnd != ""):
			fail("draining resource %q: %+v", id, *r)
		case r.excluded && (r.suspEnd != "" || r.restEnd != 0):
			fail("resource %q both excluded and suspended", id)
		case r.draining && (r.restEnd != 0 || r.ejectEnd != 0):
			fail("draining resource %q rests: %+v", id, *r)
		}
		if r.ejectEnd != 0 {
			ejected++
			if s, _ := strconv.ParseInt(r.suspEnd, 10, 64); s < r.ejectEnd {
				fail("resource %q ejected until %d but suspended until %q", id, r.ejectEnd, r.suspEnd)
			}
		}
		if r.restEnd != 0 {
			limited++
		}
		if len(r.buckets) > 0 {
			budgeted++
		}
		for _, b := range r.buckets {
			// Never overdrawn by estimates: a level below zero is a debt
			// that only Settle makes, and above full is impossible.
			if b.max < 1 || b.per < 1 || !limitExact(b.max, b.per) ||
				b.rem < 0 || b.rem >= b.per || b.units > b.max || (b.units == b.max && b.rem != 0) || b.units < minUnits {
				fail("resource %q has bucket %+v", id, b)
			}
		}
		if len(r.buckets) > 0 && r.bucketTime == 0 {
			fail("resource %q has buckets without a time", id)
		}
		if len(r.buckets) == 0 && r.fullAt != 0 {
			fail("resource %q without buckets is full at %d", id, r.fullAt)
		}
		if r.draining {
			draining++
		} else {
			live++
			countProfile(wantProfiles, r.buckets)
		}
		if r.excluded {
			excluded++
		}
		if r.suspEnd != "" || r.restEnd != 0 {
			end, _ := strconv.ParseInt(r.suspEnd, 10, 64)
			wantSusp[id] = strconv.FormatInt(max(end, r.restEnd), 10)
		}
		if !r.draining && !r.excluded && r.suspEnd == "" && r.restEnd == 0 {
			// Listed or full: it covers the default cost, 1 of each,
			// which the grant of a call without a cost does not check.
			for _, b := range r.buckets {
				if b.units < 1 {
					fail("resource %q does not rest with bucket %+v below a unit", id, b)
				}
			}
		}
		if !r.draining && !r.excluded && r.suspEnd == "" && r.restEnd == 0 && r.holders < r.capacity {
			wantAvail[fmt.Sprintf("%014d%010d:%s", r.fullAt, r.holders, id)] = r.priority
		}
	}
	if counter("#n") != live || counter("#x") != excluded || counter("#d") != draining || counter("#j") != ejected || counter("#l") != limited || counter("#b") != budgeted {
		fail("counters %v, resources: %d live, %d excluded, %d draining, %d ejected, %d resting for their buckets, %d with buckets",
			s.counters, live, excluded, draining, ejected, limited, budgeted)
	}
	if !maps.Equal(s.profiles, wantProfiles) {
		fail("profiles %v, resources' limits %v", s.profiles, wantProfiles)
	}
	checkZ := func(what string, got []redis.Z, want map[string]string) {
		if len(got) != len(want) {
			fail("%s has %d members, want %d: %v vs %v", what, len(got), len(want), got, want)
		}
		for _, z := range got {
			m := z.Member.(string)
			w, ok := want[m]
			f, _ := strconv.ParseFloat(w, 64)
			if !ok || f != z.Score {
				fail("%s member %q score %v, want %q (present %v)", what, m, z.Score, w, ok)
			}
		}
	}
	checkZ("avail", s.avail, wantAvail)
	checkZ("susp", s.susp, wantSusp)
	holders := map[string]int{}
	// REQ holds the requests of the leases and of the queued waiters.
	if len(s.req) != len(s.leases)+len(s.queue) {
		fail("%d requests for %d leases and %d waiters", len(s.req), len(s.leases), len(s.queue))
	}
	for _, z := range s.queue {
		if v := s.req[z.Member.(string)]; !strings.HasPrefix(v, "q ") {
			fail("waiter %v has entry %q", z.Member, v)
		}
	}
	if len(s.queue) > 0 && len(s.avail) > 0 && len(strings.Fields(s.req[s.queue[0].Member.(string)])) < 5 {
		// (An entry that expired may stay until a script meets it; the
		// tests' waiters re-check in time. An oldest waiter with a cost
		// waits beside free slots whose buckets do not cover it.)
		fail("%d waiters queued beside %d resources with a free slot", len(s.queue), len(s.avail))
	}
	for _, z := range s.leases {
		lease := z.Member.(string)
		token, rest, _ := strings.Cut(lease, ":")
		request, id, _ := strings.Cut(rest, ":")
		entry := s.req[request]
		head, entryID, _ := strings.Cut(entry, ":")
		head, _, _ = strings.Cut(head, "~")     // its class's part
		granted, _, _ := strings.Cut(head, "+") // what the lease paid
		if len(request) != 32 || granted != token || entryID != id {
			fail("lease %q, its request's entry %q", lease, entry)
		}
		holders[id]++
	}
	for id, r := range s.resources {
		if holders[id] != r.holders {
			fail("resource %q records %d holders, has %d leases", id, r.holders, holders[id])
		}
	}
	for id := range holders {
		if s.resources[id] == nil {
			fail("leases on unknown resource %q", id)
		}
	}
	if live == 0 && draining == 0 && (len(s.counters) > 0 || len(s.avail)+len(s.leases)+len(s.susp)+len(s.req)+len(s.queue)+len(s.profiles) > 0) {
		fail("a pool with no resource keeps state: %+v", s)
	}
	sort.Strings(bad)
	return bad
}

// countProfile counts a resource with buckets in want as count_profile
// (lua/lifecycle.lua) does: its limits -> the resources, draining ones
// aside, that have them; and '#' .. each name of those limits -> how
// many distinct limits have it.
func countProfile(want map[string]string, buckets []rawBucket) {
	var limits []string
	for _, b := range buckets {
		limit := fmt.Sprintf("%s,%d,%d", b.name, b.max, b.per)
		if b.admission {
			limit += "/a"
		}
		limits = append(limits, limit)
	}
	text := strings.Join(limits, ";")
	n, _ := strconv.Atoi(want[text])
	want[text] = strconv.Itoa(n + 1)
	for _, b := range buckets {
		if n == 0 {
			k, _ := strconv.Atoi(want["#"+b.name])
			want["#"+b.name] = strconv.Itoa(k + 1)
		}
	}
}

// The checker must be able to fail: corrupt states are reported.
func TestInvariantCheckerReportsCorruptState(t *testing.T) {
	ok := func() rawState {
		return rawState{
			resources: map[string]*rawResource{"a": {capacity: 2, holders: 1, priority: "1"}},
			counters:  map[string]string{"#n": "1"},
			avail:     []redis.Z{{Score: 1, Member: "000000000000000000000001:a"}},
			leases:    []redis.Z{{Score: 99, Member: "5:0123456789abcdef0123456789abcdef:a"}},
			req:       map[string]string{"0123456789abcdef0123456789abcdef": "5:a"},
			profiles:  map[string]string{"": "1"},
		}
	}
	if bad := invariantProblems(ok()); len(bad) != 0 {
		t.Fatalf("consistent state reported: %v", bad)
	}
	// a with a full bucket "t" of 2 per 10 ms.
	withBucket := func(s *rawState) {
		s.resources["a"].buckets = []rawBucket{{name: "74", max: 2, per: 10, units: 2}}
		s.resources["a"].bucketTime = 1
		s.counters["#b"] = "1"
		s.profiles = map[string]string{"74,2,10": "1", "#74": "1"}
	}
	withOne := ok()
	withBucket(&withOne)
	if bad := invariantProblems(withOne); len(bad) != 0 {
		t.Fatalf("consistent state with a bucket reported: %v", bad)
	}
	corruptions := map[string]func(*rawState){
		"holders without a lease":   func(s *rawState) { s.resources["a"].holders = 2 },
		"stale availability":        func(s *rawState) { s.avail[0].Member = "000000000000000000000000:a" },
		"stale headroom":            func(s *rawState) { s.resources["a"].fullAt = 5 },
		"wrong priority":            func(s *rawState) { s.avail[0].Score = 2 },
		"lease without its request": func(s *rawState) { s.req = map[string]string{} },
		"request of another lease":  func(s *rawState) { s.req["0123456789abcdef0123456789abcdef"] = "6:a" },
		"request on another resource": func(s *rawState) {
			s.req["0123456789abcdef0123456789abcdef"] = "5+74=1:b"
		},
		"wrong counter":      func(s *rawState) { s.counters["#n"] = "2" },
		"over capacity":      func(s *rawState) { s.resources["a"].capacity = 0 },
		"limits not counted": func(s *rawState) { s.profiles = map[string]string{"74,2,10": "1"} },
		"limit name not counted": func(s *rawState) {
			withBucket(s)
			delete(s.profiles, "#74")
		},
		"waiter beside a free slot": func(s *rawState) {
			s.queue = []redis.Z{{Score: 1, Member: "0123456789abcdef0123456789abcdee"}}
			s.req["0123456789abcdef0123456789abcdee"] = "q 99 1000 p"
		},
		"waiter without its entry": func(s *rawState) {
			s.avail = nil
			s.resources["a"].capacity = 1
			s.queue = []redis.Z{{Score: 1, Member: "0123456789abcdef0123456789abcdee"}}
		},
		"suspended but listed": func(s *rawState) { s.resources["a"].suspEnd = "7" },
		"resting but listed":   func(s *rawState) { s.resources["a"].restEnd = 7; s.counters["#l"] = "1" },
		"rest not counted": func(s *rawState) {
			s.resources["a"].restEnd = 7
			s.avail = nil
			s.susp = []redis.Z{{Score: 7, Member: "a"}}
		},
		"ejected not counted": func(s *rawState) {
			s.resources["a"].ejectEnd, s.resources["a"].suspEnd = 7, "7"
			s.avail = nil
			s.susp = []redis.Z{{Score: 7, Member: "a"}}
		},
		"bucket above full": func(s *rawState) {
			s.resources["a"].buckets = []rawBucket{{name: "74", max: 2, per: 10, units: 2, rem: 1}}
			s.resources["a"].bucketTime = 1
		},
		"bucket below a unit but listed": func(s *rawState) {
			s.resources["a"].buckets = []rawBucket{{name: "74", max: 2, per: 10, units: 0, rem: 9}}
			s.resources["a"].bucketTime = 1
		},
		"bucket without a time": func(s *rawState) {
			s.resources["a"].buckets = []rawBucket{{name: "74", max: 2, per: 10, units: 2}}
		},
	}
	for name, corrupt := range corruptions {
		s := ok()
		corrupt(&s)
		if bad := invariantProblems(s); len(bad) == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
	s := ok()
	s.resources["a"].buckets = []rawBucket{{name: "74", max: 2, per: 10, units: -1, rem: 9}}
	if len(overdrawn(s)) != 1 {
		t.Error("an overdrawn bucket is not reported")
	}
}
