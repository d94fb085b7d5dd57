#!/usr/bin/env bash
# instructions.sh counts the instructions one iteration of a Go benchmark
# executes, with valgrind's callgrind. Unlike a time, the count does not
# depend on what else the machine runs, so two commits can be compared on
# a loaded host, one run each.
#
# Usage: bench/scripts/instructions.sh [-C DIR] PKG BENCH...
#
#   -C DIR   the module directory to build in (default .): a checkout of
#            another commit, or bench for bench/compare
#   PKG      the package whose test binary holds the benchmarks (./scheduler)
#   BENCH    a -test.bench pattern that selects exactly one benchmark,
#            e.g. 'BenchmarkUpdate$/heaps=8$'
#
# Each benchmark runs twice under callgrind, for HIGH and LOW iterations
# (default 300001 and 100001); the difference of the two totals, divided
# by HIGH-LOW, leaves out the setup both runs share. The garbage collector,
# asynchronous preemption and a second P are off, so both runs do the same
# work besides the iterations. RDTSCP is off too: some valgrind builds
# (3.19) stop the runtime's first use of it with SIGILL. Prints one line
# per BENCH: the pattern and the instructions per iteration, to one
# decimal.
set -euo pipefail

usage() {
	echo "usage: bench/scripts/instructions.sh [-C DIR] PKG BENCH..." >&2
	exit 2
}

DIR=.
while getopts "C:h" opt; do
	case "$opt" in
	C) DIR=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -ge 2 ]] || usage
PKG=$1
shift
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind not found" >&2; exit 1; }

HIGH=${HIGH:-300001}
LOW=${LOW:-100001}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$DIR" && GOWORK=off go test -c -o "$tmp/bench.test" "$PKG")

# total N BENCH prints the instructions a run of N iterations executed.
total() {
	GOGC=off GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/out" --log-file="$tmp/log" \
		"$tmp/bench.test" -test.run '^$' -test.bench "$2" \
		-test.benchtime="${1}x" -test.cpu 1 >"$tmp/stdout"
	if ! grep -q '^Benchmark' "$tmp/stdout"; then
		echo "instructions.sh: $2 ran no benchmark" >&2
		exit 1
	fi
	if [[ $(grep -c '^Benchmark' "$tmp/stdout") -ne 1 ]]; then
		echo "instructions.sh: $2 ran more than one benchmark" >&2
		exit 1
	fi
	sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$tmp/log"
}

for bench in "$@"; do
	hi=$(total "$HIGH" "$bench")
	lo=$(total "$LOW" "$bench")
	awk -v b="$bench" -v hi="$hi" -v lo="$lo" -v n=$((HIGH - LOW)) \
		'BEGIN { printf "%s\t%.1f\n", b, (hi - lo) / n }'
done
