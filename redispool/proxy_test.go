package redispool

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a test-owned TCP proxy on loopback in front of a Redis, that
// injects the faults of a network: latency, lost replies (the
// connection closed instead of the reply forwarded), resets of every
// connection, and a partition (bytes held, not forwarded, until it
// heals). It stops with the test.
type proxy struct {
	ln       net.Listener
	target   string
	latency  atomic.Int64 // per forwarded chunk, each way
	loseNext atomic.Int64 // replies still to lose
	lost     atomic.Int64 // replies lost so far

	// Each chunk from a client, once written to the server or held by
	// a partition, is signalled here (dropped when full).
	passed chan struct{}

	mu     sync.Mutex
	links  map[*link]struct{}
	gate   chan struct{} // closed while bytes flow; open during a partition
	closed bool
	wg     sync.WaitGroup
}

// link is one client connection and its connection to the server.
type link struct {
	client, server net.Conn
	once           sync.Once
}

// cut closes both ends; with abort, with a reset rather than a close.
func (l *link) cut(abort bool) {
	l.once.Do(func() {
		for _, c := range []net.Conn{l.client, l.server} {
			if tc, ok := c.(*net.TCPConn); ok && abort {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
	})
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, links: map[*link]struct{}{}, gate: make(chan struct{}), passed: make(chan struct{}, 64)}
	close(p.gate)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.cut(true)
			return
		}
		p.links[l] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.forward(l, c, s, false)
		go p.forward(l, s, c, true)
	}
}

// forward copies from src to dst until either end closes. Replies (from
// the server) can be lost: the link is closed instead, as when a
// connection breaks after the server ran the command.
func (p *proxy) forward(l *link, src, dst net.Conn, replies bool) {
	defer p.wg.Done()
	defer func() {
		l.cut(false)
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if replies && p.takeLoss() {
				return
			}
			if d := time.Duration(p.latency.Load()); d > 0 {
				time.Sleep(d)
			}
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			select {
			case <-gate:
			default: // held during a partition; heal opens it
				if !replies {
					p.signal()
				}
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if !replies {
				p.signal()
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) signal() {
	select {
	case p.passed <- struct{}{}:
	default:
	}
}

// drain forgets the chunks signalled so far.
func (p *proxy) drain() {
	for {
		select {
		case <-p.passed:
		default:
			return
		}
	}
}

func (p *proxy) takeLoss() bool {
	for {
		n := p.loseNext.Load()
		if n <= 0 {
			return false
		}
		if p.loseNext.CompareAndSwap(n, n-1) {
			p.lost.Add(1)
			return true
		}
	}
}

// loseReplies makes the next n replies from the server be lost with
// their connection (closed, so that the client sees the end of the
// stream, which go-redis answers by sending the command again).
func (p *proxy) loseReplies(n int64) { p.loseNext.Add(n) }

// resetAll aborts every connection open now (TCP reset).
func (p *proxy) resetAll() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.cut(true)
	}
}

// partition stops forwarding (bytes are held, connections stay open)
// until heal.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
}

// heal lets held bytes flow again.
func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.heal()
	p.resetAll()
	p.wg.Wait()
}
