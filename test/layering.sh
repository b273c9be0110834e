#!/bin/bash
# The layering docs/ARCHITECTURE.md promises, checked (make lint):
#   - the SSH server (internal/gateway) imports at most 10 internal packages;
#   - what the Slurm and usage commands run (slurmsync, slurm, usage) never
#     pulls in the SSH server or the relay.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/frontdoor-hpc/frontdoor
GO=${GO:-go}
fail=0
n=$($GO list -f '{{join .Imports "\n"}}' ./internal/gateway | grep -c "^$mod/internal/" || true)
if [ "$n" -gt 10 ]; then
	echo "internal/gateway imports $n internal packages (at most 10):"
	$GO list -f '{{join .Imports "\n"}}' ./internal/gateway | grep "^$mod/internal/"
	fail=1
fi
for p in slurmsync slurm usage; do
	bad=$($GO list -deps "./internal/$p" | grep -E "^$mod/internal/(gateway|proxy)$" || true)
	if [ -n "$bad" ]; then
		echo "internal/$p depends on the SSH server: $bad"
		fail=1
	fi
done
exit $fail
