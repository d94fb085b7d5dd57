package redispool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server process started by the tests, on a
// loopback port, with no persistence and a temporary directory.
type redisServer struct {
	addr   string
	port   int
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startServer starts redis-server on port (0: a free one) and waits
// until it answers PING.
func startServer(port int, dir string) (*redisServer, error) {
	if redisBin == "" {
		return nil, errors.New("no redis-server binary")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		p := port
		if p == 0 {
			var err error
			if p, err = freePort(); err != nil {
				return nil, err
			}
		}
		s, err := launch(p, dir)
		if err == nil || port != 0 {
			return s, err
		}
		lastErr = err // the free port was taken meanwhile: pick another
	}
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts redis-server on port; extra arguments come after the
// defaults, which they override ("--appendonly", "yes" for a server
// whose data survives a restart in dir).
func launch(port int, dir string, extra ...string) (*redisServer, error) {
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, fmt.Sprintf("redis-%d.log", port)), "--loglevel", "warning",
	}, extra...)
	cmd := exec.Command(redisBin, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &redisServer{
		addr:   fmt.Sprintf("127.0.0.1:%d", port),
		port:   port,
		dir:    dir,
		cmd:    cmd,
		exited: make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(10 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls PING (bounded) until the server answers.
func (s *redisServer) waitReady(limit time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("redis-server on %s exited: %w", s.addr, err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s does not answer: %w", s.addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop terminates the server (SIGTERM; SIGKILL if it lingers) and waits
// for it to exit.
func (s *redisServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
