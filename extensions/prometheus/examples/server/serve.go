package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// shutdownGrace bounds how long a stopping server waits for scrapes in
// flight.
const shutdownGrace = 5 * time.Second

// serve serves h on ln until ctx ends, then shuts the server down
// gracefully and returns nil; it returns the server's error if it fails
// first. ln is closed either way.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second, // a stalled client cannot hold a connection open
		WriteTimeout:      10 * time.Second,
	}
	failed := make(chan error, 1)
	go func() { failed <- srv.Serve(ln) }()
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(stopCtx)
	if served := <-failed; !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	return err
}
