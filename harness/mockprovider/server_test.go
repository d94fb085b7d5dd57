package mockprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func postTo(t *testing.T, url, key string) (*http.Response, error) {
	t.Helper()
	body, _ := json.Marshal(call(1, 5))
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return http.DefaultClient.Do(req)
}

func TestListenServesOnLoopbackUntilClose(t *testing.T) {
	p, err := New(Config{Keys: []string{"k"}, RequestsPerMinute: 60})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q", s.URL)
	}
	resp, err := postTo(t, s.URL, "k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || s.Stats().Total.Served != 1 {
		t.Fatalf("status %d, served %d", resp.StatusCode, s.Stats().Total.Served)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if resp, err := postTo(t, s.URL, "k"); err == nil {
		resp.Body.Close()
		t.Fatal("served after Close")
	}
}

// Shutdown lets a running call finish; a Shutdown whose context ends first
// cuts the call's latency short instead of waiting it out.
func TestShutdownWaitsForRunningCallsOrCutsThemShort(t *testing.T) {
	inCall, release := make(chan struct{}), make(chan struct{})
	sleepCalls := make(chan context.Context, 2)
	p, err := New(Config{
		Keys:    []string{"k"},
		Latency: Latency{Min: time.Hour, Max: time.Hour},
		Sleep: func(ctx context.Context, _ time.Duration) {
			sleepCalls <- ctx
			inCall <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	// Graceful: the call in flight completes with 200.
	s, err := Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		resp, err := postTo(t, s.URL, "k")
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	<-inCall
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	release <- struct{}{}
	if status := <-got; status != http.StatusOK {
		t.Fatalf("call during a graceful shutdown: status %d", status)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	// Impatient: the context is already done, so the call's latency ends.
	s, err = Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		resp, err := postTo(t, s.URL, "k")
		if err == nil {
			resp.Body.Close()
		}
		got <- 0
	}()
	<-inCall
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown with a done context and a call running returned nil")
	}
	<-got
	<-sleepCalls
	if ctx := <-sleepCalls; ctx.Err() == nil {
		t.Fatal("the running call's context was not cancelled")
	}
	if st := p.Stats().Total; st.Served != 2 || st.Aborted != 1 {
		t.Fatalf("served %d, aborted %d, want 2 and 1", st.Served, st.Aborted)
	}
}

// A body trickled a byte at a time must not hold a connection open.
func TestTheServerBoundsEveryPhaseOfACall(t *testing.T) {
	p, err := New(Config{Keys: []string{"k"}, Latency: Latency{Min: time.Second, Max: 2 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.srv.ReadTimeout <= 0 || s.srv.IdleTimeout <= 0 || s.srv.WriteTimeout <= 2*time.Minute {
		t.Fatalf("timeouts: read %v, write %v, idle %v", s.srv.ReadTimeout, s.srv.WriteTimeout, s.srv.IdleTimeout)
	}
}
