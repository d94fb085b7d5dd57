package loadtest

import (
	"sync"
	"time"
)

// timerSet runs functions after a delay, like time.AfterFunc, and can run
// every pending one at once. The pools end rests (cooldowns, suspensions)
// with it: at the end of a run the harness cannot wait out every rest, yet
// the final check needs every resource back in the pool.
type timerSet struct {
	mu      sync.Mutex
	pending map[*pendingFunc]struct{}
	running sync.WaitGroup
}

type pendingFunc struct {
	f func()
	t *time.Timer
}

// add runs f once d has passed, or at flush, whichever comes first; f runs
// exactly once either way.
func (s *timerSet) add(d time.Duration, f func()) {
	p := &pendingFunc{f: f}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = make(map[*pendingFunc]struct{})
	}
	s.pending[p] = struct{}{}
	s.running.Add(1)
	p.t = time.AfterFunc(d, func() { s.run(p, s.take(p)) })
}

// take removes p from the pending set and reports whether it was there:
// whoever takes it (its timer or flush) runs it.
func (s *timerSet) take(p *pendingFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pending[p]
	delete(s.pending, p)
	return ok
}

func (s *timerSet) run(p *pendingFunc, taken bool) {
	if taken {
		defer s.running.Done()
		p.f()
	}
}

// flush runs every pending function now, in the caller's goroutine, and
// waits for those whose timers already fired. No add may run concurrently.
func (s *timerSet) flush() {
	s.mu.Lock()
	due := make([]*pendingFunc, 0, len(s.pending))
	for p := range s.pending {
		p.t.Stop() // if too late, its run finds p gone and does nothing
		due = append(due, p)
	}
	clear(s.pending)
	s.mu.Unlock()
	for _, p := range due {
		s.run(p, true)
	}
	s.running.Wait()
}
