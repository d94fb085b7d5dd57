// Package leakcheck fails a test binary that leaves goroutines of this
// module running, the check go.uber.org/goleak makes, for the root module,
// which takes no third-party dependencies.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// ownCode marks a goroutine as this module's: it has a frame in it.
const ownCode = "github.com/crsched/crs/"

// Main runs the tests, then exits non-zero if goroutines started by this
// module's code are still running. Goroutines may take a moment to finish
// after the call that stopped them returned, so it retries for up to
// 5 s before it reports.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := Wait(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines outlived the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// Wait polls for leaked goroutines and returns their stacks, or "" once
// there are none.
func Wait(grace time.Duration) string {
	deadline := time.Now().Add(grace)
	for delay := time.Millisecond; ; delay *= 2 {
		leaked := Leaked()
		if leaked == "" || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(delay)
	}
}

// Leaked returns the stacks of running goroutines that execute this
// module's code, other than the caller's own.
func Leaked() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the calling goroutine is listed first
			continue
		}
		if strings.Contains(g, ownCode) && !strings.Contains(g, ownCode+"internal/leakcheck.") {
			leaked = append(leaked, g)
		}
	}
	return strings.Join(leaked, "\n\n")
}
