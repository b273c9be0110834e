#!/usr/bin/env bash
# SageMaker HyperPod lifecycle snippet: run on login nodes from the cluster's
# on_create script (after the Slurm setup). Makes the node trust the
# frontdoor gateways' user CAs and starts the frontdoor agent.
#
# Expects in the lifecycle S3 prefix, next to this script:
#   frontdoor               the binary
#   frontdoor_gateways      the gateways' user CA public keys, one line per
#                           gateway: from="ITS-ADDRESSES" KEY COMMENT
#                           (docs/security.md, "The user CAs")
#   frontdoor_revoked_keys  optional: a KRL of revoked CA keys (ssh-keygen -k)
#   agent.yaml              agent config (cluster keyring, pool, the gateways)
#   gateway-addresses       the gateways' addresses as the nodes see them
#                           connect (addresses or CIDRs, one per line)
#   sshd-penalty-exemption.sh, sshd_config.d-frontdoor.conf,
#   frontdoor-agent.service   from deploy/
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

install -m 0755 "$here/frontdoor" /usr/local/bin/frontdoor
install -m 0644 "$here/frontdoor_gateways" /etc/ssh/frontdoor_gateways
# TrustedUserCAKeys lists the same keys without options (its format has
# none); this also checks the gateways file: one that cannot be read would
# refuse every login.
/usr/local/bin/frontdoor trusted-user-ca-keys /etc/ssh/frontdoor_gateways > /etc/ssh/frontdoor_user_ca_keys.new
chmod 0644 /etc/ssh/frontdoor_user_ca_keys.new
mv /etc/ssh/frontdoor_user_ca_keys.new /etc/ssh/frontdoor_user_ca_keys
if [ -f "$here/frontdoor_revoked_keys" ]; then
	install -m 0644 "$here/frontdoor_revoked_keys" /etc/ssh/frontdoor_revoked_keys
elif [ ! -f /etc/ssh/frontdoor_revoked_keys ]; then
	ssh-keygen -q -k -f /etc/ssh/frontdoor_revoked_keys   # an empty KRL
	chmod 0644 /etc/ssh/frontdoor_revoked_keys
fi
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
