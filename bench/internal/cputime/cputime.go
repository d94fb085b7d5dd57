// Package cputime reads the CPU time the process has used, for
// measurements that must hold on a shared machine: wall time counts the
// moments another process had the core, CPU time does not (though cache
// and frequency effects of the neighbours remain).
package cputime

import "time"

// Now is the CPU time the whole process has used so far, user plus
// system, across all its threads (the runtime's too: GC, scheduler,
// timers), and whether this system reports it. Only differences of two
// readings mean anything.
func Now() (time.Duration, bool) { return now() }
