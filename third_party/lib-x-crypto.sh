# Shared by the x-crypto scripts in this directory (sourced, not run).
#
# How third_party/x-crypto and test/adversarial/internal/rawssh are made
# from the pinned golang.org/x/crypto, in one place, so that the script that
# writes them and the check that compares them cannot disagree:
#   xc_download VERSION  the module from the module cache (fetched if absent)
#   xc_apply_patch DIR P one patch, zero fuzz; nothing written if it fails
#   xc_build SRC DIR     upstream + every patch, exactly (no fuzz, no offset)
#   xc_rawssh SRC DIR    the rawssh copy (see its README for the rules)

xc_module=golang.org/x/crypto
xc_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
xc_pin_file=$xc_root/third_party/x-crypto.version
xc_patches=$xc_root/third_party/patches/x-crypto
xc_tree=$xc_root/third_party/x-crypto
xc_rawssh_dir=$xc_root/test/adversarial/internal/rawssh
# rawssh's files that are frontdoor's own, not generated from upstream.
xc_rawssh_own=(rawauth.go README.md)
export PATH=$PATH:/usr/local/go/bin

xc_die() {
	echo "$*" >&2
	exit 1
}

# xc_pin prints the pinned version and its go.sum hash ("v0.59.0 h1:...").
xc_pin() {
	local mod ver sum
	read -r mod ver sum <"$xc_pin_file" || xc_die "$xc_pin_file: unreadable"
	[ "$mod" = "$xc_module" ] && [ -n "$ver" ] && [[ $sum == h1:* ]] ||
		xc_die "$xc_pin_file: want one line \"$xc_module VERSION h1:HASH\""
	echo "$ver $sum"
}

# xc_json_field FIELD prints a string field of go's -json output on stdin.
xc_json_field() {
	sed -n 's/^[[:space:]]*"'"$1"'": "\(.*\)",\{0,1\}$/\1/p' | head -1
}

# xc_download VERSION [SUM] prints "DIR VERSION SUM" of the module at
# VERSION (a version or a query such as latest), downloading it into the
# module cache if it is not there. It runs outside frontdoor's module so
# that go.mod and go.sum stay as they are. With SUM (the pin), the
# download must have that hash: then the checksum database is not needed,
# the pin plays go.sum's part.
xc_download() {
	local want=${2:-} out dir ver sum err tmp
	tmp=$(mktemp -d)
	out=$(cd "$tmp" && env GOFLAGS= GOWORK=off ${want:+GOSUMDB=off} go mod download -json "$xc_module@$1" 2>&1) || true
	rmdir "$tmp"
	dir=$(xc_json_field Dir <<<"$out")
	ver=$(xc_json_field Version <<<"$out")
	sum=$(xc_json_field Sum <<<"$out")
	err=$(xc_json_field Error <<<"$out")
	if [ -z "$dir" ] || [ ! -d "$dir" ] || [ -n "$err" ]; then
		echo "$xc_module@$1: cannot download: ${err:-$out}" >&2
		return 1
	fi
	if [ -n "$want" ] && [ "$sum" != "$want" ]; then
		echo "$xc_module@$ver: the module cache holds $sum, the pin says $want" >&2
		echo "(a tampered or corrupt module cache? go clean -modcache)" >&2
		return 1
	fi
	echo "$dir $ver $sum"
}

# xc_patch_files PATCH prints the paths a patch touches, in its order.
xc_patch_files() {
	awk '
		/^--- / { old = $2; sub(/\t.*/, "", old); next }
		/^\+\+\+ / {
			new = $2; sub(/\t.*/, "", new)
			p = (new == "/dev/null") ? old : new
			sub(/^[ab]\//, "", p)
			if (!(p in seen)) { seen[p] = 1; print p }
		}' "$1"
}

# xc_apply_patch DIR PATCH applies one patch with zero fuzz: every context
# line must match. On failure nothing is written and patch's complaint is
# on stdout. Returns 0 when every hunk landed where the patch says, 2 when
# some landed elsewhere (the "Hunk ... offset" lines are on stdout), 1 when
# the patch does not apply.
xc_apply_patch() {
	local dir=$1 p=$2 out
	local opts=(-d "$dir" -p1 --fuzz=0 --forward --batch --no-backup-if-mismatch --reject-file=-)
	if ! out=$(patch --dry-run "${opts[@]}" <"$p" 2>&1); then
		echo "$out"
		return 1
	fi
	patch --silent "${opts[@]}" <"$p" >/dev/null 2>&1 || xc_die "$(basename "$p"): applied in a dry run, not for real"
	if grep -q 'offset' <<<"$out"; then
		grep -E '^checking file|offset' <<<"$out"
		return 2
	fi
	return 0
}

# xc_copy SRC DST copies a module directory (read-only in the cache) to
# DST, which must not exist.
xc_copy() {
	cp -r "$1" "$2"
	chmod -R u+w "$2"
}

# xc_build SRC DIR: DIR (must not exist) becomes SRC plus every patch,
# each applying exactly at the lines it names. Fails on the first patch
# that does not.
xc_build() {
	local p rc out
	xc_copy "$1" "$2"
	for p in "$xc_patches"/*.patch; do
		rc=0
		out=$(xc_apply_patch "$2" "$p") || rc=$?
		case $rc in
		0) ;;
		2) xc_die "$out
$(basename "$p"): hunks apply only at other lines than the patch says; refresh it: third_party/update-x-crypto.sh" ;;
		*) xc_die "$out
$(basename "$p"): does not apply with zero fuzz" ;;
		esac
	done
}

# xc_rawssh SRC DIR writes rawssh's generated files from the upstream
# module at SRC into DIR (which must exist): LICENSE, ssh/*.go and
# ssh/internal/*/*.go without tests, imports rewritten so that the copy
# builds outside x/crypto, and any "// import" comment dropped.
xc_rawssh() {
	local src=$1 dir=$2 module f d bad
	module=$(awk '$1 == "module" { print $2; exit }' "$xc_root/go.mod")
	cp "$src/LICENSE" "$dir/LICENSE"
	for f in "$src"/ssh/*.go; do
		[[ $f == *_test.go ]] || cp "$f" "$dir/"
	done
	for d in "$src"/ssh/internal/*/; do
		mkdir -p "$dir/internal/$(basename "$d")"
		for f in "$d"*.go; do
			[[ $f == *_test.go ]] || cp "$f" "$dir/internal/$(basename "$d")/"
		done
	done
	chmod -R u+w "$dir"
	find "$dir" -name '*.go' -exec sed -i -E \
		-e 's#"golang\.org/x/crypto/internal/poly1305"#"golang.org/x/crypto/poly1305"#' \
		-e 's#"golang\.org/x/crypto/ssh/internal/#"'"$module"'/test/adversarial/internal/rawssh/internal/#' \
		-e 's#^(package [A-Za-z0-9_]+) // import "[^"]*"$#\1#' \
		{} +
	# An internal package of x/crypto other than poly1305 (which has a
	# public wrapper) cannot be imported from here: say so, do not guess.
	bad=$(grep -rn --include='*.go' -E '"golang\.org/x/crypto/(.*/)?internal/' "$dir" || true)
	[ -z "$bad" ] || xc_die "rawssh: upstream imports an internal package of x/crypto that has no rule in xc_rawssh:
$bad"
}

# xc_rawssh_own_file NAME succeeds when NAME (relative to rawssh) is one
# of frontdoor's own files there.
xc_rawssh_own_file() {
	local f
	for f in "${xc_rawssh_own[@]}"; do
		[ "$1" = "$f" ] && return 0
	done
	return 1
}
