#!/usr/bin/env bash
# Fuzz targets: every `func FuzzXxx` in the module's packages (and the
# patched x/crypto's, third_party/x-crypto/ssh).
#
#   test/fuzz.sh [PKG...]        fuzz every target of PKG (default ./...) for
#                                FUZZTIME each (default 60s): `make fuzz`
#   test/fuzz.sh --check-seeds   fail if a target has no seed corpus (no
#                                testdata/fuzz/FuzzXxx and no f.Add in its
#                                body): `make test` runs each target over its
#                                seeds, and one without any would test
#                                nothing there (`make lint`)
#
# go test -fuzz takes one package and one target at a time, so each target
# is its own run. A target's failing input is written to its package's
# testdata/fuzz/FuzzXxx/; every failure is listed at the end. FUZZMINIMIZETIME
# (default 10s) bounds the minimising of each new input, which otherwise
# can take a minute of the target's time. Fuzzing starts no real server
# (the packages' TestMain skip them when fuzzing), so it needs no lock; it
# keeps both cores busy.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}

# targets DIR: the fuzz targets of the package in DIR.
targets() { sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$1"/*_test.go 2>/dev/null; }

# packages PATTERN...: "import-path dir" lines.
packages() { go list -f '{{.ImportPath}} {{.Dir}}' "$@"; }

if [ "${1:-}" = --check-seeds ]; then
	missing=0
	while read -r pkg dir; do
		for t in $(targets "$dir"); do
			[ -n "$(ls -A "$dir/testdata/fuzz/$t" 2>/dev/null)" ] && continue
			# The body of func t, up to the first closing brace in column 1.
			body=$(awk -v t="$t" '$0 ~ "^func "t"\\(" {on=1} on {print} on && /^}/ {exit}' "$dir"/*_test.go)
			grep -q 'f\.Add(' <<<"$body" && continue
			echo "$pkg: $t has no seed corpus (testdata/fuzz/$t or f.Add)" >&2
			missing=1
		done
	done < <(packages ./... && (cd third_party/x-crypto && packages ./ssh))
	exit $missing
fi

failed=()
run() { # dir pkg target
	echo "== $3 ($2, $FUZZTIME)"
	(cd "$1" && go test -run '^$' -fuzz "^$3\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$2") || failed+=("$2 $3")
}
while read -r pkg dir; do
	for t in $(targets "$dir"); do run . "$pkg" "$t"; done
done < <(packages "${@:-./...}")
if [ $# -eq 0 ]; then
	for t in $(targets third_party/x-crypto/ssh); do run third_party/x-crypto golang.org/x/crypto/ssh "$t"; done
fi
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: FAILED %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: every target ran $FUZZTIME without a failure"
