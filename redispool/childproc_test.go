package redispool

// The parent side of the multi-process tests: starting a child (the
// test binary, run as the role named in envChild) and talking to it.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// childCmd prepares a child process of role with settings env.
func childCmd(t *testing.T, role string, env map[string]string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+role)
	for k, v := range env {
		cmd.Env = append(cmd.Env, "REDISPOOL_"+k+"="+v)
	}
	cmd.Stderr = os.Stderr
	return cmd
}

// childProcess is a running child with pipes to its stdin and stdout.
type childProcess struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	reaping sync.Once
	exited  chan struct{} // closed when Wait has returned
	err     error         // Wait's result
}

func startChild(t *testing.T, role string, env map[string]string) *childProcess {
	t.Helper()
	cmd := childCmd(t, role, env)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childProcess{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), exited: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once it has exited
		_ = c.wait(time.Minute)
	})
	return c
}

func (c *childProcess) readLine(t *testing.T) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := c.stdout.ReadString('\n')
		got <- result{strings.TrimSpace(line), err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("reading from child: %v", r.err)
		}
		return r.line
	case <-time.After(time.Minute):
		t.Fatal("child said nothing for a minute")
		return ""
	}
}

func (c *childProcess) writeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatalf("writing to child: %v", err)
	}
}

// wait waits (bounded) for the child to exit and returns its error; it
// kills a child that outlives the bound. It may be called again.
func (c *childProcess) wait(limit time.Duration) error {
	c.reaping.Do(func() {
		go func() {
			c.err = c.cmd.Wait()
			close(c.exited)
		}()
	})
	select {
	case <-c.exited:
		return c.err
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("child did not exit within %v", limit)
	}
}
