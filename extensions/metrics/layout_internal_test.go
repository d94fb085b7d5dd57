package metrics

import (
	"testing"
	"unsafe"
)

func TestCountersSitOnSeparateCacheLines(t *testing.T) {
	var o TelemetryObserver[string]
	if stride := unsafe.Sizeof(o.counts[0]); stride < cacheLine {
		t.Fatalf("counter stride is %d bytes, want at least %d", stride, cacheLine)
	}
	if first := unsafe.Offsetof(o.counts); first < cacheLine {
		t.Fatalf("first counter starts %d bytes into the observer, want at least %d of leading padding", first, cacheLine)
	}
}
