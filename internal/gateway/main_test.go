package gateway

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: logins that fail half-way
// (pre-dials, preconnections) are the classic leak of an SSH proxy.
// memberlist's Shutdown does not wait for a probe in flight, which ends on
// its own within a probe interval.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"))
}
