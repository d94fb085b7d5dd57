package waitload

import (
	"runtime"
	"time"
)

// goroutinesLeft waits, up to timeout, for the number of goroutines to fall
// back to baseline, and returns how many more there still are (0 or less
// once it has). Exiting goroutines are counted until they are gone, so a
// single reading right after a shutdown would blame a pool for goroutines
// that were about to end; a bounded poll does not.
func goroutinesLeft(baseline int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		left := runtime.NumGoroutine() - baseline
		if left <= 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}
