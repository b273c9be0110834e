#!/usr/bin/env bash
# Exempt the frontdoor gateways from sshd's PerSourcePenalties, on login
# nodes whose sshd has them (OpenSSH >= 9.8).
#
#   sshd-penalty-exemption.sh ADDRESSES [DROPIN]
#
# ADDRESSES  the gateways as the node's sshd sees them connect: addresses or
#            CIDRs, separated by commas, spaces or newlines
# DROPIN     default /etc/ssh/sshd_config.d/frontdoor-penalties.conf
# SSHD, SSHD_CONFIG (environment): the sshd binary (default: sshd on PATH)
#            and, if set, the config file `sshd -t` checks.
#
# Why: OpenSSH 9.8+ penalises a source address for every connection that
# ends before authentication, and every user arrives from a gateway's
# address: a stranger who opens and drops connections would get the gateway
# refused by every node. Older sshd (Debian 12 has 9.2) refuses the keyword
# ("Bad configuration option") and would not start, so the exemption lives
# in a drop-in of its own, written only when `sshd -V` says >= 9.8 and
# removed otherwise. The whole config is then checked with `sshd -t`; if
# that fails the previous drop-in is put back and the script fails, so a
# reload never meets a config sshd refuses. The agent warns (log, and
# `frontdoor nodes`) while a node's effective config lacks a gateway.
set -euo pipefail

usage() { echo "usage: $0 ADDRESSES [DROPIN]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
addrs="$(printf '%s' "$1" | tr -s ' \t\n,' ',,,,' | sed 's/^,//; s/,$//')"
dropin="${2:-/etc/ssh/sshd_config.d/frontdoor-penalties.conf}"
sshd="${SSHD:-sshd}"
case "$addrs" in
'' | *[!0-9A-Fa-f.:/,]*)
	echo "$0: '$1' is not a list of addresses or CIDRs" >&2
	exit 2
	;;
esac

# sshd before 9.2 has no -V: it prints the version with its usage and exits 1.
version="$("$sshd" -V 2>&1 || true)"
if [[ ! "$version" =~ OpenSSH_([0-9]+)\.([0-9]+) ]]; then
	echo "$0: cannot tell the version of $sshd: $version" >&2
	exit 1
fi
major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"

previous=""
if [ -e "$dropin" ]; then
	previous="$(mktemp)"
	cp -p "$dropin" "$previous"
fi
restore() {
	if [ -n "$previous" ]; then mv -f "$previous" "$dropin"; else rm -f "$dropin"; fi
}

if ((major > 9 || (major == 9 && minor >= 8))); then
	mkdir -p "$(dirname "$dropin")"
	tmp="$(mktemp "$dropin.XXXXXX")"
	cat >"$tmp" <<CONF
# Written by sshd-penalty-exemption.sh (frontdoor): OpenSSH $major.$minor penalises
# source addresses, and every user arrives from a gateway's. Rerun the script
# to change the list; do not add this keyword to a config older sshd reads.
PerSourcePenaltyExemptList $addrs
CONF
	chmod 0644 "$tmp"
	mv -f "$tmp" "$dropin"
	echo "sshd $major.$minor: gateways $addrs exempt from PerSourcePenalties ($dropin)"
else
	rm -f "$dropin"
	echo "sshd $major.$minor has no PerSourcePenalties: no exemption needed"
fi

if ! "$sshd" -t ${SSHD_CONFIG:+-f "$SSHD_CONFIG"}; then
	restore
	echo "$0: sshd -t refused the config; $dropin put back as it was" >&2
	exit 1
fi
[ -z "$previous" ] || rm -f "$previous"
