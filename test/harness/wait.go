package harness

import (
	"context"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness/sys"
)

// WaitFor calls cond until it returns nil, ctx ends or timeout passes; see
// sys.WaitFor.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() error) error {
	return sys.WaitFor(ctx, timeout, cond)
}
