#!/usr/bin/env bash
# compare.sh measures crs against the baseline pools of bench/compare (a
# mutex around container/heap, and a tight single-lock generic heap) in one
# `go test -bench` run, plus the strategies' Select costs in the root
# module's acquire package, and writes a markdown section for
# docs/BENCHMARKS.md: the machine, the commands, and the ratio of each
# median to the tight baseline of the same run, with the targets of issue
# #3 marked met or not (and, with INTERLEAVE=1, the parallel rows round by
# round beside the host's cache-line round trip of the same round).
#
# Usage: bench/scripts/compare.sh [-o REPORT.md] [RAW]
#
#   RAW        where to save the raw output (go test's, then benchstat's
#              tables); default bench/out/compare-raw.txt (git-ignored)
#   -o FILE    also write the markdown to FILE (it always goes to stdout)
#
# Environment:
#   COUNT      runs of each benchmark (default 6, benchstat's minimum for a
#              confidence interval)
#   BENCHTIME  go test -benchtime (default go test's, 1s)
#   BENCH      go test -bench regexp for bench/compare (default ".")
#   INTERLEAVE 1: run bench/compare COUNT times with -count 1 instead of
#              once with -count COUNT. go test runs the -count repetitions
#              of a benchmark back to back, so one implementation's samples
#              all fall in the same few seconds and a burst of load from a
#              neighbour lands on it alone; in rounds, every implementation
#              gets a sample in each, and load is shared out more evenly.
#
# Runs from any directory, and on a machine with only Go: benchstat is
# taken from PATH or $(go env GOPATH)/bin, or else run at a pinned version
# with `go run`. Progress goes to stderr; stdout is only the markdown.
set -euo pipefail

BENCHSTAT_MODULE=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

usage() {
	echo "usage: bench/scripts/compare.sh [-o REPORT.md] [RAW]   (env: COUNT, BENCHTIME, BENCH, INTERLEAVE)" >&2
	exit 2
}

# abs PATH prints PATH made absolute against the caller's directory, so
# that arguments keep their meaning in the subshells that cd elsewhere.
abs() {
	case "$1" in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s\n' "$PWD/$1" ;;
	esac
}

MD_OUT=
while getopts "o:h" opt; do
	case "$opt" in
	o) MD_OUT=$(abs "$OPTARG") ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
if [[ $# -gt 1 ]]; then
	usage
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RAW=${1:+$(abs "$1")}
RAW=${RAW:-$ROOT/bench/out/compare-raw.txt}
COUNT=${COUNT:-6}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-}
INTERLEAVE=${INTERLEAVE:-0}

# The bench module reaches the root through its replace directive; a stray
# go.work must not substitute other code.
export GOWORK=off

run_benchstat() {
	local gobin
	gobin="$(go env GOPATH | cut -d: -f1)/bin/benchstat"
	if command -v benchstat >/dev/null 2>&1; then
		benchstat "$@"
	elif [[ -x "$gobin" ]]; then
		"$gobin" "$@"
	else
		go run "$BENCHSTAT_MODULE" "$@"
	fi
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The commands, as run (arrays) and as printed (strings).
ROUNDS=1
COMPARE_COUNT=$COUNT
if [[ "$INTERLEAVE" == 1 ]]; then
	ROUNDS=$COUNT
	COMPARE_COUNT=1
fi
# Functions are aligned to 64 bytes, not the linker's default 32, so that
# a hot loop sits at the same place in its cache line whatever code comes
# before it: with the default, a change that only moved every function by
# 32 bytes changed the time of the same machine code by more than the
# effects being measured.
ALIGN=-ldflags=-funcalign=64
COMPARE_ARGS=(go test "$ALIGN" -run '^$' -bench "$BENCH" -benchmem -count "$COMPARE_COUNT")
ACQUIRE_ARGS=(go test "$ALIGN" -run '^$' -bench 'Select|GetShard|Floor' -benchmem -count "$COUNT")
if [[ -n "$BENCHTIME" ]]; then
	COMPARE_ARGS+=(-benchtime "$BENCHTIME")
	ACQUIRE_ARGS+=(-benchtime "$BENCHTIME")
fi
COMPARE_ARGS+=(./compare/)
ACQUIRE_ARGS+=(./acquire/)
shown() {
	local a out=
	for a in "$@"; do
		case "$a" in
		*[!A-Za-z0-9_./=-]*) out+=" '$a'" ;;
		*) out+=" $a" ;;
		esac
	done
	printf '%s\n' "${out# }"
}
COMPARE_CMD=$(shown "${COMPARE_ARGS[@]}")
if [[ "$ROUNDS" -gt 1 ]]; then
	COMPARE_CMD="for i in \$(seq $ROUNDS); do $COMPARE_CMD; done"
fi
ACQUIRE_CMD=$(shown "${ACQUIRE_ARGS[@]}")

echo "compare.sh: in bench/: $COMPARE_CMD" >&2
for ((round = 1; round <= ROUNDS; round++)); do
	(cd "$ROOT/bench" && "${COMPARE_ARGS[@]}")
done | tee "$TMP/compare.txt" >&2
echo "compare.sh: in the root module: $ACQUIRE_CMD" >&2
(cd "$ROOT" && "${ACQUIRE_ARGS[@]}") | tee "$TMP/acquire.txt" >&2

echo "compare.sh: benchstat" >&2
# benchstat's rows do not start with "Benchmark", so appending its tables
# leaves the raw file readable by benchstat and by the report.
{
	echo "# Raw output of bench/scripts/compare.sh, $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo "# In bench/: $COMPARE_CMD"
	cat "$TMP/compare.txt"
	echo
	echo "# In the root module: $ACQUIRE_CMD"
	cat "$TMP/acquire.txt"
	echo
	echo "# benchstat -col /impl,/heaps -filter '-.name:RankError' (bench/compare; base column: tight)"
	run_benchstat -col /impl,/heaps -filter '-.name:RankError' "$TMP/compare.txt"
	if grep -q '^BenchmarkRankError' "$TMP/compare.txt"; then
		echo
		echo "# benchstat -filter .name:RankError (bench/compare)"
		run_benchstat -filter .name:RankError "$TMP/compare.txt"
	fi
	echo
	echo "# benchstat (acquire)"
	run_benchstat "$TMP/acquire.txt"
} >"$TMP/raw.txt"
mkdir -p "$(dirname "$RAW")"
cp "$TMP/raw.txt" "$RAW"

cpu_model() {
	local m=
	if [[ -r /proc/cpuinfo ]]; then
		m=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
	fi
	if [[ -z "$m" ]]; then
		m=$(sysctl -n machdep.cpu.brand_string 2>/dev/null || true)
	fi
	printf '%s\n' "${m:-unknown}"
}

ncpu() {
	nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo unknown
}

# GOMAXPROCS as the benchmarks ran: go test appends it to every name (and
# nothing when it is 1).
procs=$(sed -n 's/^Benchmark[^[:space:]]*-\([0-9][0-9]*\)[[:space:]].*/\1/p' "$TMP/compare.txt" | head -n 1)

# The raw file as the report names it: linked relative to docs/, where the
# section goes, when it is there; otherwise by its path.
case "$RAW" in
"$ROOT"/docs/*) raw_shown="[${RAW#"$ROOT"/}](${RAW#"$ROOT"/docs/})" ;;
"$ROOT"/*) raw_shown="\`${RAW#"$ROOT"/}\`" ;;
*) raw_shown="\`$RAW\`" ;;
esac

{
	echo "## Against baseline pools"
	echo
	echo "Measured $(date -u '+%Y-%m-%d') by \`bench/scripts/compare.sh\` (COUNT=$COUNT, INTERLEAVE=$INTERLEAVE). The machine is shared: compare ratios within this run, not absolute times across runs."
	echo
	echo "- Go: \`$(go version)\`"
	echo "- OS: \`$(uname -srm)\`"
	echo "- CPU: $(cpu_model); nproc $(ncpu); GOMAXPROCS ${procs:-1}"
	echo
	echo "Commands (raw output, then benchstat's tables, in $raw_shown):"
	echo
	echo '```sh'
	echo "cd bench && $COMPARE_CMD"
	echo "$ACQUIRE_CMD    # in the repository root"
	echo '```'
	echo
	(cd "$ROOT/bench" && go run ./compare/report -raw "$TMP/raw.txt")
} >"$TMP/report.md"

if [[ -n "$MD_OUT" ]]; then
	mkdir -p "$(dirname "$MD_OUT")"
	cp "$TMP/report.md" "$MD_OUT"
fi
cat "$TMP/report.md"
