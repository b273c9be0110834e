#!/usr/bin/env bash
# Re-creates third_party/x-crypto (golang.org/x/crypto plus frontdoor's
# patch set, patches/x-crypto/*.patch in name order) and the generated
# files of test/adversarial/internal/rawssh (upstream's ssh package, not
# patched), from the version pinned in third_party/x-crypto.version.
# go.mod replaces golang.org/x/crypto with the copy; check-x-crypto.sh
# (make lint) fails when either copy drifts from what this script writes.
#
#   update-x-crypto.sh                   re-create both from the pin
#   update-x-crypto.sh VERSION           move to VERSION (or "latest")
#   update-x-crypto.sh --report VERSION  only say what moving would take
#
# Patches apply with zero fuzz: every context line must match, or the
# patch does not apply. For another VERSION the script reports, per patch,
# whether it applies (and whether at other lines than it names) and which
# of the files it touches upstream changed since the pin (+/- lines, the
# functions), with the full upstream diffs of those files in a directory it
# names. When every patch applies it writes the new copy, refreshes the
# line numbers of patches whose hunks moved, sets the pin and go.mod's
# requirement, and runs go mod tidy; when one does not, it changes nothing
# and exits 1. Non-interactive throughout. Afterwards:
# third_party/test-x-crypto.sh, make test, make bench; drop patches
# upstream has taken.
set -Eeuo pipefail
trap 'echo "update-x-crypto.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$(dirname "$0")/lib-x-crypto.sh"

report_only=
if [ "${1:-}" = --report ]; then
	report_only=1
	shift
fi
[ $# -le 1 ] || xc_die "usage: $0 [--report] [VERSION]"
read -r pin_ver pin_sum < <(xc_pin)
want=${1:-${VERSION:-$pin_ver}}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$want" = "$pin_ver" ]; then
	read -r src ver sum < <(xc_download "$pin_ver" "$pin_sum" || echo "")
else
	read -r src ver sum < <(xc_download "$want" || echo "")
fi
[ -n "$src" ] || exit 1
moving=
if [ "$ver" != "$pin_ver" ]; then
	moving=1
elif [ "$sum" != "$pin_sum" ]; then
	xc_die "$xc_module@$ver: the module cache holds $sum, the pin says $pin_sum"
fi

# refresh PATCH BEFORE AFTER writes $tmp/refreshed/NAME: the patch's
# header, then a fresh diff of the files it touches from BEFORE to AFTER
# (same style: a/ b/, /dev/null for a created or deleted file, no function
# names in hunk headers).
refresh() {
	local p=$1 before=$2 after=$3 f out
	out=$tmp/refreshed/$(basename "$p")
	mkdir -p "$tmp/refreshed"
	{
		sed '/^--- /,$d' "$p"
		while read -r f; do
			local f1=$before/$f f2=$after/$f l1=a/$f l2=b/$f
			[ -e "$f1" ] || f1=/dev/null l1=/dev/null
			[ -e "$f2" ] || f2=/dev/null l2=/dev/null
			diff -u --label "$l1" --label "$l2" "$f1" "$f2" || [ $? = 1 ]
		done < <(xc_patch_files "$p")
	} >"$out"
	sed -i -E 's/^(@@ [^@]* @@).*/\1/' "$out"
}

# upstream_changes FILE...: for each file, what upstream changed in it
# between the pin and VERSION; full diffs into $tmp/report/.
upstream_changes() {
	local f plus minus funcs
	for f in "$@"; do
		if [ ! -e "$old/$f" ] && [ ! -e "$src/$f" ]; then
			continue # created by the patch; upstream has no such file
		fi
		if [ ! -e "$old/$f" ]; then
			echo "    $f: new upstream (the patch creates it too)"
			continue
		elif [ ! -e "$src/$f" ]; then
			echo "    $f: deleted upstream"
			continue
		fi
		if cmp -s "$old/$f" "$src/$f"; then
			echo "    $f: unchanged upstream"
			continue
		fi
		mkdir -p "$report/$(dirname "$f")"
		diff -u -F '^func ' --label "$pin_ver/$f" --label "$ver/$f" "$old/$f" "$src/$f" >"$report/$f.diff" || true
		plus=$(grep -c '^+[^+]' "$report/$f.diff" || true)
		minus=$(grep -c '^-[^-]' "$report/$f.diff" || true)
		# Hunk headers name the func before each change (diff -F).
		funcs=$(sed -n -E 's/^@@ [^@]* @@ func (\([A-Za-z0-9_]+ \*?([A-Za-z0-9_]+)[^)]*\) )?([A-Za-z0-9_]+).*/\2.\3/p' "$report/$f.diff" |
			sed 's/^\.//' | sort -u | paste -sd' ')
		echo "    $f: +$plus -$minus upstream${funcs:+, near: $funcs}"
	done
}

if [ -n "$moving" ]; then
	echo "golang.org/x/crypto: $pin_ver (pinned) -> $ver ($sum)"
	read -r old _ _ < <(xc_download "$pin_ver" "$pin_sum" || echo "")
	[ -n "$old" ] || exit 1
	report=$(mktemp -d -t "x-crypto-$ver.XXXXXX")
	changed=$(diff -r -q "$old" "$src" | wc -l || true)
	changed_ssh=$(diff -r -q "$old/ssh" "$src/ssh" |
		sed -E "s#^Files $old/([^ ]*) and .*#\1#; s#^Only in $old/(.*): (.*)#\1/\2 (gone in $ver)#; s#^Only in $src/(.*): (.*)#\1/\2 (new in $ver)#" |
		grep -v -E '_test\.go|^ssh/testdata/' || true)
	echo "upstream changed $changed files; under ssh/, not counting tests (the patches and rawssh live there):"
	sed 's/^/    /' <<<"${changed_ssh:-none}"
fi

# Apply the patches one by one to a copy of upstream; a patch that does not
# apply is reported and skipped, and the ones after it still tried.
xc_copy "$src" "$tmp/new"
failed=0
for p in "$xc_patches"/*.patch; do
	name=$(basename "$p" .patch)
	mkdir "$tmp/before"
	while read -r f; do
		[ ! -e "$tmp/new/$f" ] || { mkdir -p "$tmp/before/$(dirname "$f")" && cp "$tmp/new/$f" "$tmp/before/$f"; }
	done < <(xc_patch_files "$p")
	rc=0
	out=$(xc_apply_patch "$tmp/new" "$p") || rc=$?
	case $rc in
	0) echo "$name: applies" ;;
	2)
		echo "$name: applies, but hunks moved (its line numbers are refreshed when the copy is written):"
		sed 's/^/    /' <<<"$out"
		[ -n "$report_only" ] || refresh "$p" "$tmp/before" "$tmp/new"
		;;
	*)
		failed=$((failed + 1))
		echo "$name: DOES NOT APPLY (zero fuzz):"
		sed 's/^/    /' <<<"$out"
		;;
	esac
	if [ -n "$moving" ]; then
		mapfile -t files < <(xc_patch_files "$p")
		upstream_changes "${files[@]}"
	fi
	rm -rf "$tmp/before"
done

mkdir "$tmp/rawssh"
(xc_rawssh "$src" "$tmp/rawssh") || failed=$((failed + 1))
unformatted=$(gofmt -l "$tmp/new" | sed "s#^$tmp/new/##")
if [ -n "$unformatted" ]; then
	echo "not gofmt-clean (extend patches/x-crypto/0000-ssh-testdata-gofmt.patch):"
	sed 's/^/    /' <<<"$unformatted"
fi
if [ -n "$moving" ]; then
	echo "upstream diffs of the files the patches touch: $report"
fi

if [ "$failed" -gt 0 ]; then
	echo "$failed patch(es) or the rawssh copy do not apply to $ver: nothing written" >&2
	exit 1
fi
if [ -n "$report_only" ]; then
	echo "every patch applies to $ver (--report: nothing written)"
	exit 0
fi

rm -rf "$xc_tree"
cp -r "$tmp/new" "$xc_tree"
if [ -d "$tmp/refreshed" ]; then
	cp "$tmp/refreshed"/*.patch "$xc_patches/"
	echo "refreshed: $(ls "$tmp/refreshed" | paste -sd' ')"
fi
# The generated part of rawssh is replaced; frontdoor's own files stay.
for f in $(cd "$xc_rawssh_dir" && find . -type f | sed 's#^\./##'); do
	xc_rawssh_own_file "$f" || rm "$xc_rawssh_dir/$f"
done
find "$xc_rawssh_dir" -mindepth 1 -type d -empty -delete
cp -r "$tmp/rawssh/." "$xc_rawssh_dir/"
if [ -n "$moving" ]; then
	echo "$xc_module $ver $sum" >"$xc_pin_file"
	(cd "$xc_root" && go mod edit -require="$xc_module@$ver" && go mod tidy)
	echo "pin, go.mod: $ver; now review the upstream diffs above,"
	echo "run third_party/test-x-crypto.sh, make test and make bench, and drop patches upstream took"
fi
echo "third_party/x-crypto: $xc_module $ver + $(ls "$xc_patches"/*.patch | wc -l) patches; rawssh regenerated"
