//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package loadtest

// processUsage is not measured on this system; the report leaves it out.
func processUsage() (u usage, ok bool) { return u, false }
