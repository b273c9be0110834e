#!/usr/bin/env bash
# make lint's check of the vendored x/crypto: fails when
#   - go.mod does not build golang.org/x/crypto from third_party/x-crypto at
#     the pinned version (third_party/x-crypto.version);
#   - third_party/x-crypto differs by a byte from the pinned upstream plus
#     patches/x-crypto/*.patch (applied with zero fuzz, at the lines they
#     name), or has a file too many or too few;
#   - test/adversarial/internal/rawssh differs from what update-x-crypto.sh
#     generates from the same upstream, apart from frontdoor's own files
#     there (xc_rawssh_own in lib-x-crypto.sh).
# Upstream comes from the module cache, downloaded if absent (a fresh CI
# machine: the module proxy must answer then), and must carry the pinned
# hash. Nothing in the repository is written.
set -euo pipefail
. "$(dirname "$0")/lib-x-crypto.sh"

read -r pin_ver pin_sum < <(xc_pin)

# What the module graph builds: the pinned version, from the copy.
cd "$xc_root"
got=$(go list -m -f '{{.Version}} {{with .Replace}}{{.Path}}{{end}}' "$xc_module")
[ "$got" = "$pin_ver ./third_party/x-crypto" ] ||
	xc_die "go.mod: $xc_module resolves to \"$got\", want \"$pin_ver ./third_party/x-crypto\" (the pin, third_party/x-crypto.version)"

read -r src _ _ < <(xc_download "$pin_ver" "$pin_sum" || echo "")
[ -n "$src" ] || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# diff_trees WANT GOT NAME: every file the same, none missing, none extra.
diff_trees() {
	local out
	out=$(diff -r -q "$1" "$2" 2>&1) && return 0
	out=${out//$1/upstream+patches}
	out=${out//$2/$3}
	echo "$out" | head -20 >&2
	diff -r -u "$1" "$2" 2>&1 | grep -v '^Only in ' | head -40 |
		sed -E "s#$1#upstream+patches#; s#$2#$3#; s#^((---|\+\+\+) [^\t]*)\t.*#\1#" >&2
	return 1
}

xc_build "$src" "$tmp/x-crypto"
diff_trees "$tmp/x-crypto" "$xc_tree" third_party/x-crypto ||
	xc_die "third_party/x-crypto is not $xc_module $pin_ver + patches/x-crypto: do not edit it by hand; change a patch and run third_party/update-x-crypto.sh"

mkdir "$tmp/rawssh"
xc_rawssh "$src" "$tmp/rawssh"
# The own files join the generated ones before the comparison, so that a
# generated file missing, extra or changed is all the difference left.
for f in "${xc_rawssh_own[@]}"; do
	[ ! -e "$tmp/rawssh/$f" ] || xc_die "rawssh: upstream now has $f, which is frontdoor's own file there"
	[ ! -e "$xc_rawssh_dir/$f" ] || cp "$xc_rawssh_dir/$f" "$tmp/rawssh/$f"
done
diff_trees "$tmp/rawssh" "$xc_rawssh_dir" test/adversarial/internal/rawssh ||
	xc_die "test/adversarial/internal/rawssh is not what third_party/update-x-crypto.sh generates from $xc_module $pin_ver; regenerate it"

echo "third_party/x-crypto and rawssh: $xc_module $pin_ver + $(ls "$xc_patches"/*.patch | wc -l) patches, byte for byte"
