#!/usr/bin/env bash
# llm-redis.sh runs crsload's llm scenario across processes on Redis: PROCS
# crsload-redis processes share one redispool pool of KEYS API keys and
# one mock provider (cmd/mockprovider), all on loopback, with WORKERS
# workers in total split between them. Then, with COMPARE=1, the same
# processes run the naive client (round robin, retry after Retry-After)
# against a fresh mock with the same limits. Everything it starts stops by
# itself: each run is bounded by its -duration, every process by a
# timeout, and the servers are stopped on exit.
#
# Usage: bench/scripts/llm-redis.sh [OUTDIR]
#
#   OUTDIR     where the reports go (default bench/out/llm-redis, git-ignored):
#              crs-N.txt and crs-N.json per process, mock-crs.txt (the
#              provider's counters when it stopped), and the same for naive
#
# Environment (defaults: the issue's reference run, about 2.5 minutes):
#   PROCS 3, WORKERS 50 (in total), KEYS 4, RPM 600, TPM 40000,
#   DURATION 60s, LATENCY uniform:100ms-1s (the mock's), COMPARE 1,
#   MOCK_FLAGS (more flags for the mock, such as -keep-estimate),
#   REDIS_ADDR (default: start redis-server on a free loopback port)
#
# How to read it: each process's report counts its own calls; its "The
# provider's view" section, read from the mock's GET /stats once every
# process has finished, counts every process's: the 429s the provider
# sent and the tokens spent against what its buckets allowed since it
# started (a little before the processes: the share reads a little low).
# The mock's own counters when it stopped are in mock-*.txt.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/bench/out/llm-redis}
PROCS=${PROCS:-3} WORKERS=${WORKERS:-50} KEYS=${KEYS:-4} RPM=${RPM:-600} TPM=${TPM:-40000}
DURATION=${DURATION:-60s} LATENCY=${LATENCY:-uniform:100ms-1s} COMPARE=${COMPARE:-1} MOCK_FLAGS=${MOCK_FLAGS:-}
mkdir -p "$out/bin"
bin=$out/bin

echo "building mockprovider and crsload-redis" >&2
(cd "$root" && GOWORK=off go build -o "$bin/mockprovider" ./cmd/mockprovider)
(cd "$root/redispool" && GOWORK=off go build -o "$bin/crsload-redis" ./cmd/crsload-redis)

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

# free_port prints a loopback port nothing listens on (bash's /dev/tcp).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port" >&2
	exit 1
}

addr=${REDIS_ADDR:-}
if [ -z "$addr" ]; then
	port=$(free_port)
	mkdir -p "$out/redis"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$out/redis" \
		--logfile "$out/redis/redis.log" --loglevel warning &
	pids+=($!)
	addr=127.0.0.1:$port
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	redis-cli -p "$port" ping >/dev/null
fi

keys=$(seq -s, -f 'sk-mock-%g' 1 "$KEYS")
secs=${DURATION%s}
limit=$((${secs%.*} + 120)) # a process's bound: its window, then the end of the calls and the wait for the others

# start_mock starts a fresh mock with the run's limits and sets url and
# mock (its pid); its counters go to $out/mock-$1.txt when it stops.
start_mock() {
	# shellcheck disable=SC2086 # MOCK_FLAGS is a list of flags
	"$bin/mockprovider" -keys "$KEYS" -rpm "$RPM" -tpm "$TPM" -latency "$LATENCY" $MOCK_FLAGS >"$out/mock-$1.txt" 2>&1 &
	mock=$!
	pids+=($mock)
	url=
	for _ in $(seq 100); do
		url=$(sed -n 's/^mockprovider: \(http[^ ]*\).*/\1/p' "$out/mock-$1.txt")
		[ -n "$url" ] && return
		sleep 0.1
	done
	echo "the mock provider did not start: $(cat "$out/mock-$1.txt")" >&2
	exit 1
}

# run_procs runs PROCS processes of client $1 ("crs" on the Redis pool, or
# "naive") against the mock at $url, and waits for them.
run_procs() {
	local client=$1 i n status=0 ps=()
	for i in $(seq "$PROCS"); do
		n=$((WORKERS / PROCS + (i <= WORKERS % PROCS ? 1 : 0)))
		local args=(-scenario llm -provider "$url/v1" -provider-stats -keys "$keys" -rpm "$RPM" -tpm "$TPM"
			-workers "$n" -duration "$DURATION" -seed "$i" -progress off -json "$out/$client-$i.json")
		if [ "$client" = crs ]; then
			args+=(-redis "$addr" -redis-pool "llm-redis-$$")
		else
			args+=(-pool naive)
		fi
		timeout "$limit" "$bin/crsload-redis" "${args[@]}" >"$out/$client-$i.txt" 2>"$out/$client-$i.err" &
		ps+=($!)
	done
	for p in "${ps[@]}"; do wait "$p" || status=1; done
	return $status
}

# summary prints each process's figures, then the provider's.
summary() {
	local client=$1 i
	echo "== $client: $PROCS processes, $WORKERS workers in total, $KEYS keys of $RPM rpm / $TPM tpm, $DURATION"
	for i in $(seq "$PROCS"); do
		local f=$out/$client-$i.txt
		printf '  process %d: %s served, %s 429s received; added latency p50 %s, p99 %s; %s unfinished, waited at most %s; accounting %s\n' "$i" \
			"$(awk '/^  served /{print $2; exit}' "$f")" "$(awk '/^  429s received/{print $3; exit}' "$f")" \
			"$(awk '/added \(client/{print $7; exit}' "$f")" "$(awk '/added \(client/{print $9; exit}' "$f")" \
			"$(awk '/^  unfinished /{print $2; exit}' "$f")" "$(awk '/unfinished: waited/{print $10; exit}' "$f")" \
			"$(awk '/^Accounting:/{print $2; exit}' "$f")"
	done
	echo "  the provider, when it stopped:"
	sed -n '/^mockprovider: stopped/,$p' "$out/mock-$client.txt" | sed 's/^/    /'
}

status=0
start_mock crs
echo "crs: $PROCS crsload-redis processes on Redis $addr, the mock at $url" >&2
run_procs crs || status=1
kill -INT "$mock"
wait "$mock" || true
summary crs

if [ "$COMPARE" = 1 ]; then
	start_mock naive
	echo "naive: $PROCS processes, the mock at $url" >&2
	run_procs naive || status=1
	kill -INT "$mock"
	wait "$mock" || true
	summary naive
fi
exit $status
