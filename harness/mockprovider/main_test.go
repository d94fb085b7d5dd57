package mockprovider

import (
	"testing"

	"github.com/crsched/crs/internal/leakcheck"
)

// No handler, latency wait or server goroutine outlives the tests.
func TestMain(m *testing.M) { leakcheck.Main(m) }
