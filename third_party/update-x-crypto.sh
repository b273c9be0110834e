#!/usr/bin/env bash
# Re-creates third_party/x-crypto: golang.org/x/crypto at the version below,
# plus frontdoor's patch set (third_party/patches/x-crypto/*.patch, applied
# in name order). go.mod replaces golang.org/x/crypto with this copy.
#
# On a new x/crypto release: set VERSION, run this script, then
#   (cd third_party/x-crypto && go test ./ssh/...)
# and the relay bench. A patch that no longer applies stops the script; a
# patch upstream has taken is deleted from the set.
set -euo pipefail
VERSION=${VERSION:-v0.59.0}
here=$(cd "$(dirname "$0")" && pwd)
dst=$here/x-crypto
export PATH=$PATH:/usr/local/go/bin
# Downloaded outside the module, so that go.mod and go.sum stay as they are.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$(cd "$tmp" && GOFLAGS= go mod download -json "golang.org/x/crypto@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "x/crypto $VERSION not found in the module cache" >&2; exit 1; }
rm -rf "$dst"
cp -r "$src" "$dst"
chmod -R u+w "$dst"
for p in "$here"/patches/x-crypto/*.patch; do
	echo "applying $(basename "$p")"
	patch -d "$dst" -p1 --forward --no-backup-if-mismatch < "$p"
done
# Upstream has a file or two gofmt would change (testdata); the copy is
# kept gofmt-clean like the rest of the repository.
gofmt -w "$dst"
echo "third_party/x-crypto: golang.org/x/crypto $VERSION + $(ls "$here"/patches/x-crypto/*.patch | wc -l) patches"
