package main

import (
	"strings"
	"testing"
)

// TestSummary checks issue 17's table and the goals against a result
// built by hand: every ratio comes from the right row.
func TestSummary(t *testing.T) {
	r := &result{Peer: "sshpiper", Pinned: true, Pinning: "pinned"}
	add := func(cipher, dir, path string, median, direct, socat, peer, cpu, peerCPU float64) {
		t := transferRow{Cipher: cipher, Direction: dir, Path: path, Median: median, Ratio: median / direct,
			RatioSocat: median / socat, ProxyCPU: cpu}
		if path != pathDirect && path != pathSocat {
			t.RatioPeer, t.CPURatioPeer = median/peer, cpu/peerCPU
		}
		r.Transfers = append(r.Transfers, t)
	}
	for _, c := range ciphers {
		for _, d := range []string{"up", "down"} {
			add(c.name, d, pathDirect, 400, 400, 300, 250, 0, 3)
			add(c.name, d, pathSocat, 300, 400, 300, 250, 1.2, 3)
			add(c.name, d, pathFrontdoor, 320, 400, 300, 250, 1.8, 3)
			add(c.name, d, pathPeer, 250, 400, 300, 250, 3, 3)
		}
	}
	s := summary(r)
	for _, want := range []string{
		"| aes128-gcm@openssh.com, pinned | 0.75 / 0.75 | 0.80 / 0.80 | 0.62 / 0.62 | 1.80 / 3.00 | 1.80 / 3.00 |",
		"| chacha20-poly1305@openssh.com (default), pinned | 0.75 / 0.75 |",
		"| aes128-gcm@openssh.com, pinned | 1.07 / 1.07 | 1.28 / 1.28 | 0.60 / 0.60 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	met := map[string]bool{}
	for _, g := range goals(r) {
		met[g.Goal] = g.Met
	}
	if !met["throughput ×socat, aes128-gcm@openssh.com, down"] || !met["throughput ×sshpiper, aes128-gcm@openssh.com, up"] ||
		!met["proxy CPU per GiB ×sshpiper, aes128-gcm@openssh.com, up"] || len(met) != 12 {
		t.Errorf("goals: %v", met)
	}
}
