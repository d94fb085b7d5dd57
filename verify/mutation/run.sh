#!/usr/bin/env bash
# Mutation testing of the core packages (scheduler/ and internal/) with
# gremlins. Not part of CI: about 1,000 mutants, some six hours on two
# cores.
#
#   verify/mutation/run.sh [output.json] [scheduler|internal|internal/PKG]
#
# The second argument limits the mutants to one of the two trees, or to
# one internal package (the tests run are the same either way).
#
# It copies the committed tree (git archive HEAD) to a scratch directory,
# so that gremlins never touches the work tree, and runs every mutant
# against the tests of its own package plus scheduler/ (see ./go).
# The internal test helpers (fakeclock, leakcheck) and harness/ (the
# load-test engine and the mock provider) are left out: they are not the
# library.
set -euo pipefail
GREMLINS_VERSION=v0.6.0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$PWD/gremlins.json}
only=()
case "${2:-}" in
'') ;;
scheduler) only=(-E '^internal/') ;;
internal) only=(-E '^scheduler/') ;;
internal/*)
	pkg=${2#internal/}
	if [[ ! -d "$root/internal/$pkg" || "$pkg" == */* ]]; then
		echo "run.sh: no package internal/$pkg" >&2
		exit 2
	fi
	# gremlins takes exclusions only: every other internal package.
	others=$(cd "$root/internal" && ls -d */ | tr -d / | grep -vx "$pkg" | paste -sd '|')
	only=(-E '^scheduler/' -E "^internal/($others)/")
	;;
*) echo "run.sh: scope must be scheduler, internal or internal/PKG, not ${2}" >&2; exit 2 ;;
esac

gobin=$(go env GOPATH | cut -d: -f1)/bin
if ! go version -m "$gobin/gremlins" 2>/dev/null | grep -q "gremlins.*$GREMLINS_VERSION"; then
	GOFLAGS= go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
fi

work=$(mktemp -d)
# Every mutant is built from a directory of its own, so nothing it puts
# in the build cache is found again: a cache of the run's own, removed
# with it, instead of about 200 MB a minute left in the user's. Outside
# the tree, which gremlins copies for each worker.
cache=$(mktemp -d)
trap 'rm -rf "$work" "$cache"' EXIT
export GOCACHE="$cache"
git -C "$root" archive HEAD | tar -x -C "$work"
cd "$work"
# A mutant that hangs is cut off after as long as the coverage run took,
# which builds and tests every package: several times one mutant's run.
PATH="$here:$PATH" "$gobin/gremlins" unleash \
	--coverpkg ./... --workers 2 --timeout-coefficient 1 \
	-E '^(acquire|config|errors|events|stats|extensions|examples|bench|cmd|harness|redispool|verify|tools)/' \
	-E '^internal/(fakeclock|leakcheck)/' "${only[@]}" \
	-o "$out" .
