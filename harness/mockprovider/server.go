package mockprovider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is a Provider serving HTTP on a listener of its own.
type Server struct {
	// Provider is the handler served; read its Stats at any time.
	*Provider
	// URL is the base URL, such as "http://127.0.0.1:43117": the
	// endpoint is URL + "/v1/chat/completions".
	URL string

	srv      *http.Server
	cancel   context.CancelFunc // ends the requests' contexts, and their latency waits
	done     chan struct{}      // closed when Serve has returned serveErr
	serveErr error

	// mu guards running, the handlers that have not returned; idle is
	// signalled when it drops to 0. Close waits for it, so that Stats are
	// final when Close returns.
	mu      sync.Mutex
	idle    sync.Cond
	running int
}

// Listen serves p on addr ("127.0.0.1:0" picks a free loopback port) until
// Close or Shutdown.
func Listen(addr string, p *Provider) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		Provider: p,
		URL:      "http://" + ln.Addr().String(),
		// A client has 30 s to send a request, so that bodies trickled a
		// byte at a time cannot hold connections open; an answer may take
		// the longest latency and a minute more.
		srv: &http.Server{
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      p.cfg.Latency.Max + time.Minute,
			IdleTimeout:       2 * time.Minute,
			BaseContext:       func(net.Listener) context.Context { return base },
		},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	s.idle.L = &s.mu
	s.srv.Handler = http.HandlerFunc(s.serve)
	go func() {
		s.serveErr = s.srv.Serve(ln)
		close(s.done)
	}()
	return s, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.running--; s.running == 0 {
			s.idle.Broadcast()
		}
		s.mu.Unlock()
	}()
	s.Provider.ServeHTTP(w, r)
}

// Shutdown stops accepting calls and waits for the running ones to end.
// If ctx ends first, it cuts the calls still running short (their latency
// ends at once), closes their connections and returns ctx's error. Either
// way no call is running when it returns, so Stats are final.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.cancel()
		_ = s.srv.Close() // its error would only repeat Shutdown's
	}
	s.cancel()
	return errors.Join(err, s.serveError())
}

// Close stops the server at once: running calls are cut short. Close and
// Shutdown may be called more than once.
func (s *Server) Close() error {
	s.cancel()
	err := s.srv.Close()
	return errors.Join(err, s.serveError())
}

// serveError waits for Serve and the handlers to return and gives Serve's
// error, if it is not the one every stop causes.
func (s *Server) serveError() error {
	<-s.done
	s.mu.Lock()
	for s.running > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
	if !errors.Is(s.serveErr, http.ErrServerClosed) {
		return s.serveErr
	}
	return nil
}
