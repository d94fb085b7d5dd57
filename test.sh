#!/usr/bin/env bash
# test.sh runs every check for every Go module in the repository:
# gofmt, go vet, staticcheck and go test -race, then the release check
# (tools/modcheck: every published module builds from a module proxy, as
# `go get` would fetch it).
#
# Usage: ./test.sh [go test flags...]     e.g. ./test.sh -short
#        SHORT=1 ./test.sh                same as ./test.sh -short
#
# Prerequisites, checked first with one line each: the Go version the
# modules declare, a C compiler (go test -race needs cgo) and redis-server
# (redispool's tests; without it they skip, and the summary says so, unless
# CRS_REQUIRE_REDIS=1, which makes it a failure). staticcheck is the tool
# of tools/go.mod (its `tool` directive, Go 1.24+): `go tool` builds it
# at the version that go.mod pins into the build cache, the first time
# only, and never touches the user's own.
#
# Modules are found by looking for go.mod files (hidden directories,
# vendor/ and testdata/ are skipped), so a new nested module is tested as
# soon as it exists.
#
# Each package is compiled once: go vet and staticcheck analyse the race
# build, the one go test -race compiles (go vet -race; staticcheck's go
# list with GOFLAGS=-race), so the tests reuse what they compiled, and go
# test skips its own subset of vet (-vet=off), which the full go vet has
# run. The work overlaps where it can: staticcheck builds in the
# background from the start, while the foreground runs gofmt and go vet
# in each module, then staticcheck in each; a background job runs each
# module's go test, in order, as soon as its go vet has passed, and the
# foreground, once done with staticcheck, takes the modules the job has
# not reached yet, from the last one back. Every step is announced before
# it starts, with what it compiles and the time since the start, and the
# run ends with the seconds each step took.
set -euo pipefail

# Always run from the repository root, whatever the caller's cwd.
cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT=$(pwd)

# Nested modules reach the root through replace directives; a developer's
# stray go.work must not hide a missing one.
export GOWORK=off

TEST_FLAGS=()
if [[ $# -gt 0 ]]; then
	TEST_FLAGS=("$@")
fi
if [[ "${SHORT:-}" == 1 ]]; then
	TEST_FLAGS+=(-short)
fi
TEST_CMD="go test -race -count=1 -vet=off${TEST_FLAGS[*]+ ${TEST_FLAGS[*]}} ./..."

START=$SECONDS
CURRENT="setup"

# Scratch space: the background jobs' logs, and the files through which
# they and the foreground tell each other what is done.
STATE=$(mktemp -d "${TMPDIR:-/tmp}/crs-test.XXXXXX")

# The background jobs, each in a process group of its own (set -m), so
# that a failure or Ctrl-C ends them and every process they started.
BG_PIDS=()
on_exit() {
	local rc=$? p
	for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do
		kill -- "-$p" 2>/dev/null || true
	done
	rm -rf "$STATE"
	if [[ $rc -ne 0 ]]; then
		echo
		echo "FAIL: $CURRENT (exit $rc)" >&2
	fi
}
trap on_exit EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# background FUNCTION starts FUNCTION as a background job, its pid in BG.
background() {
	set -m
	"$@" </dev/null &
	BG=$!
	set +m
	BG_PIDS+=("$BG")
}

# elapsed prints the time since the start.
elapsed() {
	local s=$((SECONDS - START))
	if [[ $s -ge 60 ]]; then
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	else
		printf '%ds' "$s"
	fi
}

# header names the next step, with the time since the start.
header() {
	echo
	echo "==> [$(elapsed)] $*"
}

# ---------------------------------------------------------------- modules
# (Written for bash 3.2 as well, the default bash on macOS: no mapfile, no
# associative arrays, no "${empty[@]}" under set -u.)

# Module directories relative to the root ("." first), one per go.mod.
# Hidden directories (.git, and .tools, which holds a module cache) and
# vendor/ and testdata/ hold no module of ours.
MODULES=()
while IFS= read -r m; do
	MODULES+=("$m")
done < <(
	find . \( -name '.?*' -o -name vendor -o -name testdata \) -prune -o \
		-type f -name go.mod -print |
		sed -e 's|/go\.mod$||' -e 's|^\./||' | LC_ALL=C sort
)
if [[ ${#MODULES[@]} -eq 0 ]]; then
	echo "test.sh: no go.mod found under $ROOT" >&2
	exit 1
fi

# All .go files, tracked and untracked (minus git-ignored ones) when this is
# a git work tree, otherwise everything on disk. Paths are relative to ROOT.
list_go_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard -- '*.go'
	else
		find . \( -name '.?*' -o -name vendor -o -name testdata \) -prune -o -type f -name '*.go' -print0
	fi
}
ALL_GO_FILES=()
while IFS= read -r -d '' f; do
	f=${f#./}
	case "/$f" in
	*/vendor/* | */testdata/*) continue ;;
	esac
	if [[ -f "$f" ]]; then # skip tracked files deleted from the work tree
		ALL_GO_FILES+=("$f")
	fi
done < <(list_go_files)

# set_owner FILE sets OWNER to the module directory FILE belongs to: the
# deepest module directory containing it.
set_owner() {
	local f=$1 m
	OWNER=.
	for m in "${MODULES[@]}"; do
		if [[ "$m" != . && "$f" == "$m"/* && ${#m} -gt ${#OWNER} ]]; then
			OWNER=$m
		fi
	done
}

# ---------------------------------------------------------- prerequisites

CURRENT="prerequisites"
echo "test.sh: prerequisites"
MISSING=0

# The newest go directive among the modules is the Go they need. The
# toolchain is not switched for us (GOTOOLCHAIN=local): a machine without
# the module proxy's toolchains would fail later and less clearly.
need_go=$(for m in "${MODULES[@]}"; do sed -n 's/^go \([0-9.]*\).*/\1/p' "$m/go.mod"; done | LC_ALL=C sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
have_go=$(GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//')
if [[ "$(printf '%s\n%s\n' "$need_go" "$have_go" | LC_ALL=C sort -t. -k1,1n -k2,2n -k3,3n | head -n 1)" == "$need_go" ]]; then
	echo "  ok       Go $have_go (the modules need $need_go or newer)"
else
	echo "  MISSING  Go $need_go or newer: this is Go $have_go (https://go.dev/dl/)"
	MISSING=1
fi
export GOTOOLCHAIN=local

cc=$(go env CC)
if command -v "${cc%% *}" >/dev/null 2>&1; then
	echo "  ok       C compiler ($cc), for go test -race"
else
	echo "  MISSING  C compiler ($cc): go test -race needs cgo (Debian: apt-get install gcc)"
	MISSING=1
fi

REDIS_SKIPPED=""
if [[ -n "${CRS_REDIS_ADDR:-}" ]]; then
	echo "  ok       Redis at CRS_REDIS_ADDR=$CRS_REDIS_ADDR, for redispool's tests"
elif command -v redis-server >/dev/null 2>&1; then
	echo "  ok       redis-server ($(command -v redis-server)), for redispool's tests"
elif [[ "${CRS_REQUIRE_REDIS:-}" == 1 ]]; then
	echo "  MISSING  redis-server, required by CRS_REQUIRE_REDIS=1 (Debian: apt-get install redis-server)"
	MISSING=1
else
	echo "  SKIP     redis-server not found: redispool's Redis tests will be skipped (Debian: apt-get install redis-server)"
	REDIS_SKIPPED="redis-server was not found, so redispool's Redis tests were SKIPPED (apt-get install redis-server)"
fi

if [[ $MISSING -ne 0 ]]; then
	echo "test.sh: install what is MISSING above, then run it again" >&2
	exit 1
fi

# ------------------------------------------------------------ staticcheck

# The version tools/go.mod pins, for the messages.
STATICCHECK_VERSION=$(sed -n 's|^[[:space:]]*honnef\.co/go/tools \(v[^[:space:]]*\).*|\1|p' tools/go.mod)
if [[ -z "$STATICCHECK_VERSION" ]]; then
	echo "test.sh: tools/go.mod requires no honnef.co/go/tools (staticcheck)" >&2
	exit 1
fi

# build_staticcheck builds the tool into the build cache (where go tool
# keeps the binaries it builds) and writes its path, which go tool -n
# prints instead of running it.
build_staticcheck() {
	cd "$ROOT/tools"
	if go tool -n staticcheck >"$STATE/staticcheck.path" 2>"$STATE/staticcheck.log"; then
		touch "$STATE/staticcheck.ok"
	fi
}

# ------------------------------------------------------------------ tests

N=${#MODULES[@]}

# test_module I runs module I's go test, unless another runner has claimed
# it (mkdir is atomic) or it has no Go files, and prints its output whole
# once it ends. A failure leaves the file test-failed, for the foreground.
test_module() {
	local i=$1 mod t0 rc=0 verdict
	mod=${MODULES[$((i - 1))]}
	mkdir "$STATE/claim.$i" 2>/dev/null || return 0
	if [[ -e "$STATE/empty.$i" ]]; then
		touch "$STATE/tested.$i"
		return 0
	fi
	t0=$SECONDS
	header "[$i/$N] $mod: $TEST_CMD (compiles the tests and links them; the rest is compiled already, for go vet -race)"
	(cd "$ROOT/$mod" && go test -race -count=1 -vet=off ${TEST_FLAGS[@]+"${TEST_FLAGS[@]}"} ./...) >"$STATE/test.$i.log" 2>&1 </dev/null || rc=$?
	echo "$((SECONDS - t0))" >"$STATE/time.test.$i"
	verdict="passed"
	if [[ $rc -ne 0 ]]; then
		verdict="FAILED (exit $rc)"
	fi
	{
		header "[$i/$N] $mod: go test -race $verdict in $((SECONDS - t0))s:"
		cat "$STATE/test.$i.log"
	} >"$STATE/test.$i.out"
	if [[ $rc -ne 0 ]]; then
		echo "$mod" >"$STATE/test-failed"
		cat "$STATE/test.$i.out" >&2
		return 1
	fi
	cat "$STATE/test.$i.out"
	touch "$STATE/tested.$i"
}

# run_tests, the background job, tests the modules in order, each once the
# foreground has vetted it (the file vetted.I).
run_tests() {
	local i
	for i in $(seq 1 "$N"); do
		while [[ ! -e "$STATE/vetted.$i" ]]; do
			sleep 1
		done
		test_module "$i"
	done
}

# stop_if_tests_failed ends the run, once the background job has, if a
# module's go test failed (its output is printed already).
stop_if_tests_failed() {
	if [[ -e "$STATE/test-failed" ]]; then
		CURRENT="go test [$(cat "$STATE/test-failed")]"
		wait "$TESTS_PID" || true
		exit 1
	fi
}

# ------------------------------------------------------------------ checks

echo
echo "test.sh: $(go version); $N module(s): ${MODULES[*]}"
echo "test.sh: gofmt -l and go vet -race in each module, then staticcheck ./... in each; each"
echo "         module's go test -race runs in the background once its go vet has passed"

CURRENT="build staticcheck $STATICCHECK_VERSION"
header "building staticcheck $STATICCHECK_VERSION (honnef.co/go/tools, the tool of tools/go.mod), in the background: from source the first time (about 2 min on 2 cores), from the build cache after that"
background build_staticcheck
SC_PID=$BG

background run_tests
TESTS_PID=$BG

i=0
for mod in "${MODULES[@]}"; do
	i=$((i + 1))
	stop_if_tests_failed
	cd "$ROOT/$mod"
	CURRENT="go list -m [$mod]"
	name=$(go list -m)

	CURRENT="gofmt [$mod]"
	header "[$i/$N] $mod ($name): gofmt -l"
	files=()
	for f in ${ALL_GO_FILES[@]+"${ALL_GO_FILES[@]}"}; do
		set_owner "$f"
		if [[ "$OWNER" == "$mod" ]]; then
			files+=("$f")
		fi
	done
	if [[ ${#files[@]} -gt 0 ]]; then
		unformatted=$(cd "$ROOT" && gofmt -l "${files[@]}")
		if [[ -n "$unformatted" ]]; then
			echo "gofmt: these files need formatting (run gofmt -w on them):" >&2
			echo "$unformatted" >&2
			exit 1
		fi
	fi
	echo "ok (${#files[@]} files)"
	if [[ ${#files[@]} -eq 0 ]]; then
		# go vet and staticcheck fail on a module with no packages (e.g. a
		# nested module whose go.mod was added before its code).
		echo "no Go files in $mod: skipping go vet, staticcheck and go test"
		touch "$STATE/empty.$i" "$STATE/vetted.$i"
		continue
	fi

	CURRENT="go vet [$mod]"
	header "[$i/$N] $mod: go vet -race ./... (compiles the module's dependencies for -race, the standard library's too the first time, and downloads the missing ones)"
	t0=$SECONDS
	go vet -race ./...
	echo "$((SECONDS - t0))" >"$STATE/time.vet.$i"
	touch "$STATE/vetted.$i"
done

stop_if_tests_failed
CURRENT="build staticcheck $STATICCHECK_VERSION"
if [[ ! -e "$STATE/staticcheck.ok" ]]; then
	header "waiting for the staticcheck build (started at 0s)"
fi
wait "$SC_PID" || true
if [[ ! -e "$STATE/staticcheck.ok" ]]; then
	cat "$STATE/staticcheck.log" >&2
	exit 1
fi
STATICCHECK=$(cat "$STATE/staticcheck.path")
echo "staticcheck: $("$STATICCHECK" -version)"

# staticcheck loads its packages with go list, which reads GOFLAGS: -race
# makes it analyse the build go vet has compiled. The user's GOFLAGS
# (from the environment or go env -w) are kept.
SC_GOFLAGS=$(go env GOFLAGS)
SC_GOFLAGS="${SC_GOFLAGS:+$SC_GOFLAGS }-race"

i=0
for mod in "${MODULES[@]}"; do
	i=$((i + 1))
	if [[ -e "$STATE/empty.$i" ]]; then
		continue
	fi
	stop_if_tests_failed
	cd "$ROOT/$mod"
	CURRENT="staticcheck [$mod]"
	header "[$i/$N] $mod: staticcheck ./... (analyses the dependencies too, the first time: its own cache keeps the results)"
	t0=$SECONDS
	GOFLAGS=$SC_GOFLAGS "$STATICCHECK" ./...
	echo "$((SECONDS - t0))" >"$STATE/time.sc.$i"
done

# The foreground, done with the analyses, tests the modules the background
# job has not reached, from the last one back.
CURRENT="go test"
for i in $(seq "$N" -1 1); do
	stop_if_tests_failed
	CURRENT="go test [${MODULES[$((i - 1))]}]"
	test_module "$i"
done
CURRENT="go test"
waiting=""
for i in $(seq 1 "$N"); do
	if [[ ! -e "$STATE/tested.$i" ]]; then
		waiting="$waiting ${MODULES[$((i - 1))]}"
	fi
done
if [[ -n "$waiting" && ! -e "$STATE/test-failed" ]]; then
	header "waiting for go test in the background:$waiting"
fi
wait "$TESTS_PID" || true
stop_if_tests_failed
for i in $(seq 1 "$N"); do
	if [[ ! -e "$STATE/tested.$i" ]]; then
		echo "test.sh: go test of ${MODULES[$((i - 1))]} ended without a result" >&2
		exit 1
	fi
done

# Seconds per step and module ("-": skipped).
header "seconds per step: go vet -race, staticcheck, go test -race (the tests ran beside the rest)"
i=0
for mod in "${MODULES[@]}"; do
	i=$((i + 1))
	row=""
	for step in vet sc test; do
		if [[ -e "$STATE/time.$step.$i" ]]; then
			row="$row $(printf '%6s' "$(cat "$STATE/time.$step.$i")")"
		else
			row="$row      -"
		fi
	done
	printf '  [%d/%d] %-24s%s\n' "$i" "$N" "$mod" "$row"
done

CURRENT="done"
echo
echo "PASS: gofmt, go vet, staticcheck, go test -race for $N module(s) in $(elapsed)"
if [[ -n "$REDIS_SKIPPED" ]]; then
	echo
	echo "WARNING: $REDIS_SKIPPED" >&2
fi
