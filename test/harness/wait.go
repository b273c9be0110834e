package harness

import (
	"context"
	"fmt"
	"time"
)

// WaitFor calls cond until it returns nil, ctx ends or timeout passes, with
// a short growing pause between calls. The error names the last failure, so
// a test that times out says what it was waiting for.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pause := 5 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %s: %w", timeout, err)
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}
