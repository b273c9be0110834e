// Package lifecycle runs a gateway process from start to exit, and changes
// it without dropping a session:
//
//   - reload (SIGHUP, `systemctl reload`, POST /v1/reload, `frontdoor
//     reload`): the configuration file is checked as `frontdoor config
//     check` checks it and applied to new logins, or nothing changes
//     (internal/assembly, reload.go);
//   - upgrade (SIGUSR2, POST /v1/upgrade, `frontdoor upgrade`): the binary
//     installed at the same path is started with the listening sockets
//     (SSH, the admin socket and TCP listener) handed to it by
//     github.com/cloudflare/tableflip; once it is ready, it accepts every
//     connection and this process stops accepting and drains;
//   - drain (after an upgrade, and on SIGTERM): no new logins; the sessions
//     go on until they end or gateway.drain_timeout, their users told at
//     the start, 10 and 1 minute before, and why when the timeout closes
//     them; the process exits with its last session;
//   - SIGINT closes every session at once and exits.
//
// The state machine is in machine.go, the notices in drain.go, the
// channel between the old and the new process in handover.go.
//
// # Upgrades and the rest of the cluster
//
// A gateway is one member of the gossip cluster, and its sessions count
// toward every user's session cap and every node's load on all gateways.
// During an upgrade two processes of the same gateway run: the new one
// takes every new login, the old one keeps its sessions, often for hours.
// Only one of them can hold the gossip port. The new process takes the
// gateway's place as the last step before it becomes ready — the member
// (same name, same port), the audit spool, and the count of the old
// process's sessions, which the old one then keeps up to date over the
// handover channel until it exits (assembly/handover.go says how, and why
// this way rather than a custom memberlist transport over handed-over
// sockets). So another gateway counts a user's session in the old process
// before, during and after the handover; the cluster sees one gateway
// throughout. A new process that fails after it took the place (it dies,
// or never becomes ready) leaves the old one to take it back, which it
// does with a new gossip member.
//
// tableflip keeps at most two processes: an upgrade is refused while the
// previous process still drains. To upgrade again sooner, end the old
// process's sessions (SIGINT to it).
//
// # systemd
//
// deploy/systemd/frontdoor-gateway.service runs the gateway with
// Type=notify: the first process says READY=1; after an upgrade the old
// process names the new one as the unit's main process (MAINPID=, which
// NotifyAccess=main allows the main process), so that `systemctl reload`
// and `systemctl stop` reach the process that serves. `systemctl stop`
// sends SIGTERM to every process of the unit: each drains, and
// TimeoutStopSec must be longer than gateway.drain_timeout.
package lifecycle
