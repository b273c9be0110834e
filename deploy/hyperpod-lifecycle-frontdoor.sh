#!/usr/bin/env bash
# SageMaker HyperPod lifecycle snippet: run on login nodes from the cluster's
# on_create script (after the Slurm setup). Makes the node trust the
# frontdoor user CA and starts the frontdoor agent.
#
# Expects in the lifecycle S3 prefix, next to this script:
#   frontdoor              the binary
#   frontdoor_user_ca.pub  the gateways' user CA public key
#   agent.yaml             agent config (cluster keyring, pool, the gateways)
#   gateway-addresses      the gateways' addresses as the nodes see them
#                          connect (addresses or CIDRs, one per line)
#   sshd-penalty-exemption.sh, sshd_config.d-frontdoor.conf,
#   frontdoor-agent.service   from deploy/
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

install -m 0755 "$here/frontdoor" /usr/local/bin/frontdoor
install -m 0644 "$here/frontdoor_user_ca.pub" /etc/ssh/frontdoor_user_ca.pub
install -d -m 0755 /etc/ssh/sshd_config.d /etc/frontdoor /var/lib/frontdoor
install -m 0644 "$here/sshd_config.d-frontdoor.conf" /etc/ssh/sshd_config.d/frontdoor.conf
install -m 0600 "$here/agent.yaml" /etc/frontdoor/agent.yaml
# Node name for routing (user+node) defaults to the short host name.
sed -i "s/^\(\s*name:\s*\).*NODE_NAME.*/\1$(hostname -s)/" /etc/frontdoor/agent.yaml

# OpenSSH >= 9.8 only: exempt the gateways from PerSourcePenalties (older
# sshd refuses the keyword). Checks the config with sshd -t; on failure it
# puts the previous drop-in back and stops this script before the reload.
bash "$here/sshd-penalty-exemption.sh" "$(cat "$here/gateway-addresses")"

sshd -t   # refuse to continue with a broken sshd config
systemctl reload ssh || systemctl reload sshd
install -m 0644 "$here/frontdoor-agent.service" /etc/systemd/system/frontdoor-agent.service
systemctl daemon-reload
systemctl enable --now frontdoor-agent
