//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package loadtest

import "syscall"

// processUsage reads getrusage(RUSAGE_SELF): the CPU time the process has
// used, user plus system, over every thread (the runtime's included, since
// timers, goroutine scheduling and GC are part of what a load test
// costs), and how many times the operating system took a CPU away from
// one of its threads (involuntary context switches): on a shared machine,
// the time other processes took.
func processUsage() (u usage, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return u, false
	}
	return usage{cpu: ru.Utime.Nano() + ru.Stime.Nano(), preempted: int64(ru.Nivcsw)}, true
}
