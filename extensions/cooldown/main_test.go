package cooldown_test

import (
	"testing"

	"github.com/crsched/crs/internal/leakcheck"
)

// Every test shuts down the schedulers it starts; fail the run if a
// dispatcher or timer goroutine outlives the tests.
func TestMain(m *testing.M) { leakcheck.Main(m) }
