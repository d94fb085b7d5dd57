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
# CRS_REQUIRE_REDIS=1, which makes it a failure). staticcheck is installed,
# pinned, into .tools/ in the repository, never over the user's own.
#
# Modules are found by looking for go.mod files (hidden directories,
# vendor/ and testdata/ are skipped), so a new nested module is tested as
# soon as it exists.
set -euo pipefail

STATICCHECK_VERSION=v0.8.2

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
TEST_CMD="go test -race -count=1${TEST_FLAGS[*]+ ${TEST_FLAGS[*]}} ./..."

START=$SECONDS
CURRENT="setup"
trap 'rc=$?; if [[ $rc -ne 0 ]]; then echo; echo "FAIL: $CURRENT (exit $rc)" >&2; fi' EXIT

# header names the next step, with the time since the start.
header() {
	echo
	echo "==> [$((SECONDS - START))s] $*"
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

GOBIN_DIR="$ROOT/.tools/bin"
STATICCHECK="$GOBIN_DIR/staticcheck"

# v0.8.2's "staticcheck -version" prints "staticcheck 2026.2.2 (0.8.2)",
# without the "v"; accept "(v0.8.2)" too.
staticcheck_ok() {
	[[ -x "$STATICCHECK" ]] || return 1
	local v
	v=$("$STATICCHECK" -version 2>/dev/null) || return 1
	[[ "$v" == *"($STATICCHECK_VERSION)"* || "$v" == *"(${STATICCHECK_VERSION#v})"* ]]
}

CURRENT="install staticcheck $STATICCHECK_VERSION"
if ! staticcheck_ok; then
	header "installing staticcheck $STATICCHECK_VERSION into $GOBIN_DIR"
	GOBIN="$GOBIN_DIR" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
	if ! staticcheck_ok; then
		echo "test.sh: $STATICCHECK does not report version $STATICCHECK_VERSION" >&2
		exit 1
	fi
fi

# ------------------------------------------------------------------ checks

echo "test.sh: $(go version); ${#MODULES[@]} module(s): ${MODULES[*]}"

for mod in "${MODULES[@]}"; do
	MOD_START=$SECONDS
	cd "$ROOT/$mod"
	CURRENT="go list -m [$mod]"
	name=$(go list -m)

	CURRENT="gofmt [$mod]"
	header "$name ($mod): gofmt -l"
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
		continue
	fi

	CURRENT="go vet [$mod]"
	header "$name ($mod): go vet ./..."
	go vet ./...

	CURRENT="staticcheck [$mod]"
	header "$name ($mod): staticcheck ./..."
	"$STATICCHECK" ./...

	CURRENT="go test [$mod]"
	header "$name ($mod): $TEST_CMD"
	go test -race -count=1 ${TEST_FLAGS[@]+"${TEST_FLAGS[@]}"} ./...
	echo "($mod: $((SECONDS - MOD_START))s)"
done

CURRENT="done"
echo
echo "PASS: gofmt, go vet, staticcheck, go test -race for ${#MODULES[@]} module(s) in $((SECONDS - START))s"
if [[ -n "$REDIS_SKIPPED" ]]; then
	echo
	echo "WARNING: $REDIS_SKIPPED" >&2
fi
