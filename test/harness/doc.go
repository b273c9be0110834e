// Package harness starts the real components frontdoor is tested against:
// OpenSSH sshd login nodes on loopback addresses (127.0.1.x), local Unix
// users for them, an in-process gateway with its configuration, and the
// real OpenSSH client programs (ssh, scp, sftp, rsync) pointed at either.
//
// It serves two callers: end-to-end tests (which register cleanup with
// t.Cleanup) and the local stack behind `make run` (which calls Stop/Close
// itself). Nothing in here sleeps to synchronise: readiness is polled with a
// deadline (WaitFor). Nothing hard-codes a port: every listener picks a free
// one, so test packages can run in parallel.
//
// Everything runs as root on loopback; the login nodes share this machine's
// users and file system, which tests use to check what arrived "on the node".
package harness
