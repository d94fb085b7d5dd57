package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/harness/mockprovider"
)

// command is run() in a goroutine, its stdout read line by line.
type command struct {
	lines chan string
	code  chan int
	out   *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(ctx context.Context, args ...string) *command {
	r, w := io.Pipe()
	c := &command{lines: make(chan string, 100), code: make(chan int, 1), out: &lockedBuffer{}}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	go func() {
		code := run(ctx, args, w, c.out)
		w.Close()
		c.code <- code
	}()
	return c
}

// banner reads the lines printed before serving: the URL and the keys.
func (c *command) banner(t *testing.T) (url string, keys []string) {
	t.Helper()
	for line := range c.lines {
		if rest, ok := strings.CutPrefix(line, "mockprovider: "); ok && url == "" {
			url, _, _ = strings.Cut(rest, " ")
		}
		if k, ok := strings.CutPrefix(line, "key "); ok {
			keys = append(keys, k)
		}
		if len(keys) > 0 && !strings.HasPrefix(line, "key ") {
			t.Fatalf("unexpected line %q", line)
		}
		if url != "" && len(keys) == 4 {
			return url, keys
		}
	}
	t.Fatalf("the command ended before printing its URL and keys; stderr %q", c.out.String())
	return "", nil
}

// rest is what the command prints after the banner, once it has ended.
func (c *command) rest() string {
	var b strings.Builder
	for line := range c.lines {
		b.WriteString(line + "\n")
	}
	return b.String()
}

func chat(t *testing.T, url, key string) *http.Response {
	t.Helper()
	body := `{"messages": [{"role": "user", "content": "hello"}], "max_tokens": 20}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestCommandServesUntilItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := start(ctx, "-keys", "4", "-rpm", "2", "-tpm", "40000", "-addr", "127.0.0.1:0", "-latency", "fixed:0", "-fail-keys", "sk-mock-4")
	url, keys := c.banner(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || keys[0] != "sk-mock-1" || keys[3] != "sk-mock-4" {
		t.Fatalf("url %q, keys %v", url, keys)
	}
	for i, want := range []int{200, 200, 429} {
		if resp := chat(t, url, keys[0]); resp.StatusCode != want {
			t.Fatalf("call %d: status %d, want %d", i, resp.StatusCode, want)
		}
	}
	if resp := chat(t, url, "sk-mock-5"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown key: status %d", resp.StatusCode)
	}
	if resp := chat(t, url, keys[3]); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("-fail-keys sk-mock-4: status %d", resp.StatusCode)
	}
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var s mockprovider.Stats
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil || s.Keys[0].Served != 2 || s.Keys[0].RateLimited != 1 || s.Unauthorized != 1 || len(s.Keys) != 4 {
		t.Fatalf("stats %+v, %v", s, err)
	}

	cancel()
	select {
	case code := <-c.code:
		if code != 0 {
			t.Fatalf("exit status %d, stderr %q", code, c.out.String())
		}
	case <-time.After(time.Minute): // a bound on a hang, not a timing assertion
		t.Fatal("the command did not stop")
	}
	report := c.rest()
	var row []string
	for _, line := range strings.Split(report, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "sk-mock-1" {
			row = f
		}
	}
	// key, served, 429s, too large, 400s, ...
	if !strings.Contains(report, "stopped after") || len(row) < 5 || row[1] != "2" || row[2] != "1" {
		t.Fatalf("report:\n%s", report)
	}
	if _, err := http.Get(url + "/stats"); err == nil {
		t.Fatal("still serving after it stopped")
	}
}

func TestCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-keys", "0"},
		{"-rpm", "-1"},
		{"-latency", "slow"},
		{"-nope"},
		{"extra"},
		{"-addr", "127.0.0.1:notaport"},
		{"-fail-keys", "sk-mock-9"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		if code == 0 || stderr.Len() == 0 || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "-tpm") {
		t.Errorf("-h: exit %d, stdout %q", code, stdout.String())
	}
}
