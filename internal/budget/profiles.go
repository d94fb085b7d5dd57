package budget

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/config"
)

// Profiles counts the resources by the sizes of their budgets, so that a
// cost that no resource can ever cover is refused at once
// (ErrCostExceedsLimits) rather than waited for: pools have few distinct
// sets of limits, often one per tier of API key. A resource is counted,
// moved and uncounted under its shard's lock, in the step that adds it,
// changes its limits or removes it, so that the counts are those of the
// resources present whenever no shard lock is held: counted later than it
// became visible, a resource removed at once would leave a negative
// count, and every cost would seem to exceed the pool's limits. Its
// methods are safe for concurrent use; its lock is taken after a shard
// lock, or with none, and takes no other lock. The zero value is empty.
type Profiles struct {
	mu     sync.Mutex
	counts map[string]int // by profileKey; guarded by mu
	limits map[string][]config.Limit
	// names holds the limit names of the profiles counted, nil while
	// there are none; replaced, not changed, when a profile comes or goes,
	// so that Unknown reads it without the lock.
	names atomic.Pointer[map[string]struct{}]
}

func profileKey(limits []config.Limit) string {
	var b strings.Builder
	for _, l := range limits {
		b.WriteString(strconv.Quote(l.Name))
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(l.Max, 10))
		b.WriteByte(';')
	}
	return b.String()
}

// Change adds d resources with limits.
func (p *Profiles) Change(limits []config.Limit, d int) {
	k := profileKey(limits)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(k, limits, d)
}

// add is Change with the key k and p.mu held.
func (p *Profiles) add(k string, limits []config.Limit, d int) {
	if p.counts == nil {
		p.counts = make(map[string]int)
		p.limits = make(map[string][]config.Limit)
	}
	p.counts[k] += d
	if p.counts[k] == 0 {
		delete(p.counts, k)
		delete(p.limits, k)
		p.rename()
	} else if _, ok := p.limits[k]; !ok {
		p.limits[k] = slices.Clone(limits)
		p.rename()
	}
}

// rename rebuilds names from the profiles counted. Requires p.mu.
func (p *Profiles) rename() {
	if len(p.limits) == 0 {
		p.names.Store(nil)
		return
	}
	names := make(map[string]struct{})
	for _, limits := range p.limits {
		for _, l := range limits {
			names[l.Name] = struct{}{}
		}
	}
	p.names.Store(&names)
}

// Unknown returns the first name, in sorted order, that cost gives and no
// resource counted has a limit for, and whether there is one. With no
// resource counted it reports none: the names cannot be checked. It takes
// no lock.
func (p *Profiles) Unknown(cost config.Cost) (string, bool) {
	names := p.names.Load()
	if names == nil {
		return "", false
	}
	return FirstMissing(cost, *names)
}

// FirstMissing returns the first name, in sorted order, that cost gives
// and known does not hold, and whether there is one.
func FirstMissing(cost config.Cost, known map[string]struct{}) (name string, missing bool) {
	for n := range cost {
		if _, ok := known[n]; !ok && (!missing || n < name) {
			name, missing = n, true
		}
	}
	return name, missing
}

// Move moves a resource from the profile of limits was to that of now in
// one step, so that no Exceeds in between sees a pool without it, and
// reports whether the profiles changed.
func (p *Profiles) Move(was, now []config.Limit) bool {
	kw, kn := profileKey(was), profileKey(now)
	if kw == kn {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(kw, was, -1)
	p.add(kn, now, 1)
	return true
}

// Exceeds reports whether the pool has resources and cost is above a
// limit's Max on every one of them.
func (p *Profiles) Exceeds(cost config.Cost) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.counts) == 0 {
		return false
	}
	for k, c := range p.counts {
		if c <= 0 {
			continue
		}
		fitsAll := true
		for _, l := range p.limits[k] {
			if cost.Of(l.Name) > l.Max {
				fitsAll = false
				break
			}
		}
		if fitsAll {
			return false
		}
	}
	return true
}

// Counts returns the resources counted, by ProfileKey of their limits
// (for invariant checks).
func (p *Profiles) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// ProfileKey names the profile of limits: equal for the same names and
// sizes in the same order.
func ProfileKey(limits []config.Limit) string { return profileKey(limits) }
