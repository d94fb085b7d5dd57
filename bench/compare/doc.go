// Package compare measures crs against two baseline pools in one
// `go test -bench` run, so that every claim about crs's speed is a ratio
// against code measured on the same machine at the same moment, not an
// absolute time on a shared, noisy machine.
//
// The baselines implement the library's core operations with the same
// semantics (Add, all-or-nothing BatchAdd, Update, shared Acquire,
// exclusive Acquire and Release, the library's sentinel errors), and
// nothing else:
//
//   - HeapPool: one sync.Mutex around container/heap and a map from key to
//     item, the pool most Go programmers would write first.
//   - TightPool: one sync.Mutex around a generic binary heap with no
//     interface calls, the heap index kept in the item, and a map from
//     key to item: the fastest single-lock pool a careful engineer would
//     write, hence the reference the targets are ratios against.
//
// The benchmarks replay the workloads of scheduler/scheduler_bench_test.go
// and are named impl=tight, impl=heap, impl=crs/heaps=N (and
// impl=crs-adaptive/heaps=N and impl=crs-local/heaps=N, crs with
// another strategy) so that benchstat lines them up with
// `-col /impl,/heaps`. bench/scripts/compare.sh runs them and writes the
// ratio tables; the report subpackage computes those tables.
//
// The package also holds a rank-error harness (BenchmarkRankError): how
// many available resources were better than the one Acquire handed out,
// the price of sharding the heap; and BenchmarkLineRoundTrip, what the
// host charges to move a cache line between two cores, which the
// parallel rows depend on.
package compare
