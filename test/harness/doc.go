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
//
// The pieces, in the order a test or the stack uses them:
//
//	keys, _ := harness.Keys(dir)                       // cluster host key, trusted CAs, KRL
//	harness.EnsureUnixUser("alice")                    // useradd -m, password field "*"
//	alice, _ := harness.NewUser(dir, "alice", "pw", "nlp-lab") // key pair + argon2id hash
//	harness.WriteUsersFile(usersYAML, alice)           // static directory file
//	node, _ := harness.StartNode(ctx, harness.NodeOptions{Name: "login1",
//		Addr: "127.0.1.1", Dir: dir, UserCAPub: keys.UserCAPub,
//		RevokedKeys: keys.RevokedKeys}) // real sshd
//	gw, _ := harness.StartGateway(ctx, harness.GatewayOptions{Dir: dir,
//		Config: harness.GatewayConfig{Keys: keys, UsersFile: usersYAML,
//			Nodes: []harness.NodeEntry{node.Entry("general")}}}) // in-process gateway,
//			// signing with its own user CA (keys.GatewayCA), which the nodes trust
//	res := harness.Run(gw.Client(alice).SSH(ctx, "alice", "hostname"), nil) // real ssh
//
// WriteGatewayConfig alone writes the YAML (and the nodes' known_hosts) for
// running the frontdoor binary instead. NodeEntry.KnownHosts can be replaced
// to present a node whose host key does not match.
package harness
