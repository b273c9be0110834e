package gateway

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: logins that fail half-way
// (pre-dials, preconnections) are the classic leak of an SSH proxy.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
