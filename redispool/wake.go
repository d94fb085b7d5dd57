package redispool

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub delivers to this Pool's waiting Acquire calls the grants that
// other calls (of any process) hand them. The waiters queue in Redis,
// in the pool's one queue; the script that frees a slot grants it to
// the oldest waiter there and PUBLISHes the grant on the channel of
// that waiter's Pool, which this hub's subscription receives and passes
// to the waiter by its request.
//
// The subscription starts with the first Acquire and lasts until Close,
// so that waiting costs no command per wait and no connection per
// waiter.
type hub struct {
	client  redis.UniversalClient
	channel string        // this Pool's own channel
	closing chan struct{} // closed by close: waiters return
	// ready is closed once the subscription is confirmed and the
	// waiters then registered have been told to look again: one that
	// joins after it is not woken by that confirmation.
	ready chan struct{}

	mu      sync.Mutex
	waiters map[string]*waiter // by request: every Acquire call in progress
	queue   list.List          // of *waiter queued on the server, oldest first
	// due is when, by the local clock, the server will next free a slot
	// by itself (a lease deadline, the end of a suspension), as this
	// Pool's latest queued request learnt; zero: nothing scheduled. The
	// oldest queued waiter re-checks then, so that the server notices.
	due     time.Time
	started bool
	closed  bool
	ps      *redis.PubSub
	done    chan struct{} // closed when the dispatcher has exited
}

// waiter is one Acquire call.
type waiter struct {
	request string
	grant   chan grantMsg // 1-buffered: the server granted this request
	recheck chan struct{} // 1-buffered: look again (a message may be lost)
	// rearm (1-buffered): w is the oldest queued waiter, which watches
	// due, and became it or due came earlier: its timer is to be set
	// again.
	rearm chan struct{}
	elem  *list.Element // in hub.queue once queued on the server
}

// grantMsg is a grant told on the channel.
type grantMsg struct{ token, id string }

func newHub(client redis.UniversalClient, channel string) *hub {
	return &hub{
		client:  client,
		channel: channel,
		closing: make(chan struct{}),
		ready:   make(chan struct{}),
		waiters: map[string]*waiter{},
		done:    make(chan struct{}),
	}
}

// join registers an Acquire call of request, before it first asks the
// server, so that a grant told at once finds it.
func (h *hub) join(request string) *waiter {
	w := &waiter{request: request, grant: make(chan grantMsg, 1), recheck: make(chan struct{}, 1), rearm: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiters[request] = w
	return w
}

// queued notes that w waits in the server's queue, and starts the
// subscription if this is the first wait. A grant told before the
// server confirms the subscription is lost, but the confirmation makes
// every waiter look again.
func (h *hub) queued(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.elem == nil {
		w.elem = h.queue.PushBack(w)
	}
	if !h.started && !h.closed {
		h.started = true
		go h.dispatch()
	}
}

// leave forgets w. A grant told to it later is dropped: the caller
// gives back what its request got (abandon). The waiter after the
// oldest takes over its watch on due.
func (h *hub) leave(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters, w.request)
	if w.elem == nil {
		return
	}
	head := h.queue.Front() == w.elem
	h.queue.Remove(w.elem)
	w.elem = nil
	if head {
		h.rearmHead()
	}
}

// rearmHead tells the oldest queued waiter to set its timer again;
// h.mu is held.
func (h *hub) rearmHead() {
	if f := h.queue.Front(); f != nil {
		select {
		case f.Value.(*waiter).rearm <- struct{}{}:
		default:
		}
	}
}

// schedule notes what the server answered a queued request sent at
// sent: the time until it frees a slot by itself (next, < 0: nothing
// scheduled). An answer to a request sent after the current due
// replaces it (the server had passed that time); an older one only
// brings it forward.
func (h *hub) schedule(sent time.Time, next time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	due := h.due
	superseded := !sent.Before(due)
	switch {
	case next < 0:
		if superseded {
			due = time.Time{}
		}
	case superseded || sent.Add(next).Before(due):
		due = sent.Add(next)
	}
	// Only an earlier due makes the oldest waiter set its timer again:
	// one set for a later time fires early, and its re-check learns.
	earlier := !due.IsZero() && (h.due.IsZero() || due.Before(h.due))
	h.due = due
	if earlier {
		h.rearmHead()
	}
}

// watch returns due if w is this Pool's oldest queued waiter and the
// server has something scheduled.
func (h *hub) watch(w *waiter) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.elem == nil || h.queue.Front() != w.elem || h.due.IsZero() {
		return time.Time{}, false
	}
	return h.due, true
}

// waiting is the number of queued waiters.
func (h *hub) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queue.Len()
}

// deliver passes a message to its waiter, if it is still there: a
// grant, "request token id", or "request" alone, which tells the waiter
// to look again (the pool has no resource left: see tidy in
// lua/step.lua).
func (h *hub) deliver(payload string) {
	request, grant, granted := strings.Cut(payload, " ")
	h.mu.Lock()
	w := h.waiters[request]
	h.mu.Unlock()
	if w == nil {
		return
	}
	if !granted {
		select {
		case w.recheck <- struct{}{}:
		default:
		}
		return
	}
	token, id, ok := strings.Cut(grant, " ")
	if !ok {
		return
	}
	select {
	case w.grant <- grantMsg{token: token, id: id}:
	default:
	}
}

// recheckAll makes every waiter look again.
func (h *hub) recheckAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.waiters {
		select {
		case w.recheck <- struct{}{}:
		default:
		}
	}
}

// dispatch subscribes and passes grants to waiters until close.
// go-redis reconnects and resubscribes by itself (and pings the
// connection to find out that it died); each (re)subscription is
// confirmed by a Subscription message, after which every waiter looks
// again, since what was published meanwhile is lost.
func (h *hub) dispatch() {
	defer close(h.done)
	ps := h.client.Subscribe(context.Background(), h.channel)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = ps.Close()
		return
	}
	h.ps = ps
	h.mu.Unlock()
	for m := range ps.ChannelWithSubscriptions() {
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.recheckAll()
				h.markReady()
			}
		case *redis.Message:
			h.deliver(m.Payload)
		}
	}
}

func (h *hub) markReady() {
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
}

// close ends the subscription and makes every waiter return.
func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.closing)
	started, ps := h.started, h.ps
	h.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	if started {
		<-h.done
	}
}
