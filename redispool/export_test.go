package redispool

import "time"

// The only places where tests change a Pool's unexported state: its
// hooks, and what a test must make happen that no call of the API can.
// Call them while no call of the Pool runs.

// onParked makes f run each time a waiter of p is about to block for the
// first time (see hooks.parked).
func (p *Pool) onParked(f func()) { p.hooks.parked = f }

// setRequestWindow makes the server keep the records of p's later
// writes for ms milliseconds instead of RequestWindow.
func (p *Pool) setRequestWindow(ms int64) { p.hooks.windowMs = ms }

// setCloseWait bounds Close's wait for p's give-backs by d instead of
// abandonTimeout.
func (p *Pool) setCloseWait(d time.Duration) { p.hooks.closeWait = d }

// swapWaiters makes ws the waiters that h delivers messages to, and
// returns those it had.
func (h *hub) swapWaiters(ws map[string]*waiter) map[string]*waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.waiters
	h.waiters = ws
	return old
}
