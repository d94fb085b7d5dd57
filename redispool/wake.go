package redispool

import (
	"container/list"
	"context"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// hub wakes this Pool's waiting Acquire calls when a slot is freed by
// any process: the scripts PUBLISH the number of slots they freed on the
// pool's channel, one subscription per Pool receives it, and each message
// wakes that many local waiters, oldest first. A waiter that is woken
// and loses the race (to another process) goes back in its place.
//
// The subscription starts with the first wait and lasts until Close, so
// that waiting costs no command per wait and no connection per waiter.
type hub struct {
	client  redis.UniversalClient
	channel string
	closing chan struct{} // closed by close: waiters return
	ready   chan struct{} // closed once the subscription is confirmed

	mu      sync.Mutex
	queue   list.List // of *waiter, oldest first
	seq     uint64    // arrivals, to keep the queue in order
	started bool
	closed  bool
	ps      *redis.PubSub
	done    chan struct{} // closed when the dispatcher has exited
}

// waiter is one Acquire call waiting in the queue.
type waiter struct {
	wake chan struct{} // 1-buffered: a slot was announced to this waiter
	elem *list.Element // in hub.queue; nil while it was woken and not requeued
	seq  uint64        // arrival order
}

func newHub(client redis.UniversalClient, channel string) *hub {
	return &hub{
		client:  client,
		channel: channel,
		closing: make(chan struct{}),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// join queues a new waiter at the back, starting the subscription if
// this is the first wait.
func (h *hub) join() *waiter {
	w := &waiter{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	w.seq = h.seq
	w.elem = h.queue.PushBack(w)
	if !h.started && !h.closed {
		h.started = true
		go h.dispatch()
	}
	return w
}

// requeue puts a woken waiter back in its place, among the oldest (the
// woken ones are). It is queued again before it looks, so that a slot
// freed after its look wakes it.
func (h *hub) requeue(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.elem != nil {
		return
	}
	e := h.queue.Front()
	for e != nil && e.Value.(*waiter).seq < w.seq {
		e = e.Next()
	}
	if e == nil {
		w.elem = h.queue.PushBack(w)
	} else {
		w.elem = h.queue.InsertBefore(w, e)
	}
}

// leave removes a waiter that stops waiting. If it was woken and did not
// act on it, the wake-up goes to the next waiter instead of being lost.
func (h *hub) leave(w *waiter) {
	h.mu.Lock()
	if w.elem != nil {
		h.queue.Remove(w.elem)
		w.elem = nil
	}
	h.mu.Unlock()
	select {
	case <-w.wake:
		h.wake(1)
	default:
	}
}

// isHead reports whether w is the oldest waiter, the one that re-checks
// when the server will next free something by itself.
func (h *hub) isHead(w *waiter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.elem != nil && h.queue.Front() == w.elem
}

// waiting is the number of queued waiters.
func (h *hub) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.queue.Len()
}

// wake wakes the n oldest waiters (all of them for n < 0).
func (h *hub) wake(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ; n != 0 && h.queue.Len() > 0; n-- {
		w := h.queue.Remove(h.queue.Front()).(*waiter)
		w.elem = nil
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// dispatch subscribes and turns messages into wake-ups until close.
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
				h.markReady()
				h.wake(-1)
			}
		case *redis.Message:
			n, err := strconv.Atoi(m.Payload)
			if err != nil || n < 1 {
				n = 1
			}
			h.wake(n)
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
