package loadtest

import (
	"io"
	"strings"
	"testing"
)

// A run that would need more memory than the machine has available is
// refused before anything starts, with one line that says what it would
// need, why that is refused, and how to run it anyway.
func TestARunNeedingMoreMemoryThanAvailableIsRefusedWithWhatItNeeds(t *testing.T) {
	workers, resources, llm := Default(), Default(), Default()
	workers.Workers = 20_000_000
	resources.Resources = 100_000_000
	llm.Scenario, llm.Workers = LLM, 1_000_000
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{workers, "workers: 20,000,000 workers and 4 resources would need about 58.0 GB of memory (2.90 kB a worker, 400 B a resource), more than the 24.0 GB this machine has available: the run would swap or be killed; use fewer, or -force to run anyway"},
		{resources, "resources: 10,000 workers and 100,000,000 resources would need about 40.0 GB of memory"},
		{llm, "workers: 1,000,000 workers and 4 resources would need about 50.0 GB of memory (50.0 kB a worker, 2.00 kB a resource)"},
	} {
		err := checkMemory(tc.c, 24e9, "this machine has available")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%d workers, %d resources: %v, want %q", tc.c.Workers, tc.c.Resources, err, tc.want)
		}
	}
	if err := checkMemory(Default(), 1e9, "available"); err != nil {
		t.Errorf("the default run in 1 GB: %v", err)
	}

	// More than any machine has: refused by the flags, unless -force.
	for _, args := range [][]string{
		{"-workers", "2000000000"}, {"-resources", "1000000000000"}, {"-scenario", "llm", "-workers", "100000000"},
	} {
		_, err := ParseFlags(args, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), args[len(args)-2][1:]+": ") || !strings.Contains(err.Error(), "TB of memory") ||
			!strings.Contains(err.Error(), "-force") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", args, err)
		}
		if _, err := ParseFlags(append(args, "-force"), io.Discard); err != nil {
			t.Errorf("%v -force: %v", args, err)
		}
	}
}
