// Package bench is the home of crs's comparative measurements: the
// programs and benchmarks that need third-party code (other pools, the
// extended sync packages) and therefore cannot live in the root module,
// which must keep no third-party dependency.
//
// The module reaches the root through a replace directive, so it always
// measures the code in this work tree, never a published version.
//
//   - waitload (package and cmd/waitload): many goroutines waiting for a
//     few exclusive resources, run against crs and against baseline pools.
//   - leasebench_test.go: the cost of a Lease over an anonymous exclusive
//     hold, uncontended.
//   - memory_test.go: the bytes the scheduler keeps per resource, and its
//     affinity ring's, at 100,000 and 1,000,000 resources.
//   - compare: crs against baseline heap pools in one benchmark run (see
//     its package doc and scripts/compare.sh).
package bench
