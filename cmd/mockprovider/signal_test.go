//go:build unix

package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCommandStopsOnSIGTERM(t *testing.T) {
	c := start(context.Background(), "-keys", "4")
	url, _ := c.banner(t)
	// run registered for the signal before printing the banner, so the
	// signal reaches it rather than ending the test binary.
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-c.code:
		if code != 0 {
			t.Fatalf("exit status %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the command did not stop on SIGTERM")
	}
	if !strings.Contains(c.rest(), "stopped after") {
		t.Fatal("no report after SIGTERM")
	}
	if _, err := http.Get(url + "/stats"); err == nil {
		t.Fatal("still serving after SIGTERM")
	}
}
