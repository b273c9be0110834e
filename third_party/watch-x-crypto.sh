#!/usr/bin/env bash
# make lint's release watch: asks the module proxy whether a golang.org/x/crypto
# newer than the pinned one (third_party/x-crypto.version) is out, and
# prints a warning line if so. It never fails: a proxy that does not answer
# within XC_WATCH_TIMEOUT seconds (default 5) is a one-line note, because a
# vendored copy must not make lint depend on the network. Security fixes
# to x/crypto ship as releases, so this is what keeps one from going
# unnoticed; govulncheck, where its database is reachable, names them (see
# third_party/README.md).
set -uo pipefail
. "$(dirname "$0")/lib-x-crypto.sh"

read -r pin_ver _ < <(xc_pin)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Outside frontdoor's module: inside, the replace would answer for it.
out=$(cd "$tmp" && env GOFLAGS= GOWORK=off timeout "${XC_WATCH_TIMEOUT:-5}" go list -m -versions "$xc_module" 2>"$tmp/err")
rc=$?
if [ $rc -ne 0 ]; then
	why=$(tail -1 "$tmp/err")
	[ $rc -ne 124 ] || why="no answer in ${XC_WATCH_TIMEOUT:-5}s"
	echo "note: x/crypto release watch skipped, module proxy not reachable (${why:-go list exit $rc})"
	exit 0
fi
# "golang.org/x/crypto v0.1.0 ... v0.59.0", in semver order; releases only.
read -r -a versions < <(grep "^$xc_module " <<<"$out")
if [ ${#versions[@]} -lt 2 ]; then
	echo "note: x/crypto release watch skipped, the module proxy lists no versions of $xc_module"
	exit 0
fi
newer=()
seen=
for v in "${versions[@]:1}"; do
	[[ $v == *-* ]] && continue
	if [ -n "$seen" ]; then
		newer+=("$v")
	elif [ "$v" = "$pin_ver" ]; then
		seen=1
	fi
done
if [ -z "$seen" ]; then
	echo "WARNING: the module proxy does not list the pinned $xc_module $pin_ver (retracted? listed: ${versions[*]: -1})"
elif [ ${#newer[@]} -gt 0 ]; then
	echo "WARNING: $xc_module ${newer[*]} released; third_party/x-crypto is $pin_ver + patches: run third_party/update-x-crypto.sh --report ${newer[-1]} (see third_party/README.md)"
else
	echo "x/crypto release watch: $pin_ver is the newest $xc_module release"
fi
