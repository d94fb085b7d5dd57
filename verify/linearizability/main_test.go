package linearizability

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a scheduler, or a goroutine of the tests,
// outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
