package adversarial_test

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// Unauthenticated clients may make the gateway open node connections
// ahead of the proof (the preconnect on first bytes, the backend dial
// after an accepted key query) only within backend.speculative_max and
// speculative_per_node (issue 8, part 4). Many sources, each within its
// per-source limits, hold connections that sent a version line or a key
// query bob's public key passes (a public key is no secret): the node
// connections the gateway holds meanwhile, counted in this network
// namespace's TCP table, stay within the budget, and bob still logs in.
// (With the budget at 400/200 the same clients hold 36 node connections,
// one per client: the count is real.)
func TestSpeculationBounded(t *testing.T) {
	const (
		specMax     = 4
		specPerNode = 2
		sources     = 12
		perSource   = 3
	)
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		c.Gateway.PerSourceMaxStartups, c.Gateway.MaxStartups = perSource+1, 200
		c.Backend.SpeculativeMax, c.Backend.SpeculativePerNode = specMax, specPerNode
	}})
	base := nodeConns(t)
	var held []*rawssh.RawConn
	for s := range sources {
		src := fmt.Sprintf("127.0.0.%d", 100+s)
		for i := range perSource {
			rc := dialRaw(t, g, src)
			held = append(held, rc)
			if i == 0 {
				continue // version and key exchange only: the preconnect
			}
			userauth(t, rc)
			expect(t, "query with bob's public key", send(t, rc, "query", rawssh.PublicKeyQuery(bobName, bob.pub, "")), rawssh.ReplyPKOK)
		}
	}
	// The dials run in the background: look for a while, keep the peak.
	peak := 0
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		peak = max(peak, nodeConns(t)-base)
		tm := time.NewTimer(50 * time.Millisecond)
		<-tm.C
	}
	t.Logf("speculation: %d unauthenticated connections from %d sources (%d key queries accepted); node connections held by the gateway: peak %d (speculative_max %d, per node %d)",
		len(held), sources, sources*(perSource-1), peak, specMax, specPerNode)
	if peak == 0 {
		t.Errorf("no node connection seen at all: is the preconnect off, or the TCP table read wrong?")
	}
	if peak > specMax {
		t.Errorf("%d node connections for unauthenticated clients, speculative_max is %d", peak, specMax)
	}
	loginAs(t, g, "127.0.0.99", bob)
	for _, rc := range held {
		rc.Close()
	}
}

// nodeConns counts TCP connections in this network namespace whose remote
// end is one of the login nodes' sshd (the client sides: the gateway's and
// any test's), established or being opened.
func nodeConns(t *testing.T) int {
	t.Helper()
	want := map[string]bool{}
	for _, n := range nodes {
		want[procAddr(t, n.Addr)] = true
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 4 || fl[0] == "sl" {
			continue
		}
		// st 01 ESTABLISHED, 02 SYN_SENT
		if want[fl[2]] && (fl[3] == "01" || fl[3] == "02") {
			n++
		}
	}
	return n
}

// procAddr is host:port as /proc/net/tcp writes it (IPv4 little-endian
// hex, port hex).
func procAddr(t *testing.T, hostport string) string {
	t.Helper()
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(h).To4()
	port, err := strconv.Atoi(p)
	if err != nil || ip == nil {
		t.Fatalf("node address %q", hostport)
	}
	return strings.ToUpper(hex.EncodeToString([]byte{ip[3], ip[2], ip[1], ip[0]})) + fmt.Sprintf(":%04X", port)
}
