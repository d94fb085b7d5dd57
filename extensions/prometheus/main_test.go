package prometheus_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test shuts down the schedulers it starts; fail the run if a
// dispatcher or expiry goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
