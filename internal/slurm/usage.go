package slurm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// GPUTable is how many GPUs running jobs hold, per user and per account.
type GPUTable struct {
	ByUser    map[string]int
	ByAccount map[string]int
	// At is when it was read.
	At time.Time
}

// RunningGPUs reads the GPUs running jobs hold from slurmctld (squeue):
// the gres/gpu count of each job's allocated TRES. squeue has no
// --parsable2; every field of the --Format ends in '|' instead (the
// ":0" width means "as wide as the value").
func (c *Client) RunningGPUs(ctx context.Context) (GPUTable, error) {
	out, err := c.run(ctx, "squeue", "--noheader", "--states=RUNNING", "--all",
		"--Format=UserName:0|,Account:0|,tres-alloc:0|")
	if err != nil {
		return GPUTable{}, fmt.Errorf("slurm: running jobs: %w", err)
	}
	return parseRunning(out)
}

// parseRunning sums the GPUs per user and account from squeue's rows.
func parseRunning(out string) (GPUTable, error) {
	rows, err := parseSuffixed(out, 3)
	if err != nil {
		return GPUTable{}, err
	}
	t := GPUTable{ByUser: map[string]int{}, ByAccount: map[string]int{}}
	for _, r := range rows {
		tres, err := parseTRES(r[2])
		if err != nil {
			return GPUTable{}, fmt.Errorf("squeue: %w", err)
		}
		if tres["gres/gpu"] > maxGPUs {
			return GPUTable{}, fmt.Errorf("squeue: job of %s: %d GPUs is not a plausible count", r[0], tres["gres/gpu"])
		}
		if n := tres["gres/gpu"]; n > 0 {
			t.ByUser[r[0]] += n
			t.ByAccount[r[1]] += n
		}
	}
	return t, nil
}

// Usage is what the login banner shows: GPUs a user and their account hold
// now. Known is false when Slurm did not answer in time.
type Usage struct {
	User, Account int
	Known         bool
}

// UserGPUs is the user's count for the banner, or "unknown".
func (u Usage) UserGPUs() string { return u.count(u.User) }

// AccountGPUs is the account's count for the banner, or "unknown".
func (u Usage) AccountGPUs() string { return u.count(u.Account) }

func (u Usage) count(n int) string {
	if !u.Known {
		return "unknown"
	}
	return strconv.Itoa(n)
}

// UsageCache answers banner lookups from one squeue read shared by every
// login, refreshed at most every TTL, and never makes a login wait longer
// than Wait: a slow or dead slurmctld yields Usage{Known: false} while the
// refresh goes on in the background (bounded by the client's Timeout).
type UsageCache struct {
	// Client reads the jobs.
	Client *Client
	// TTL is how long a read is served (default 15s).
	TTL time.Duration
	// Wait is the longest a lookup waits for a refresh (default 300ms).
	Wait time.Duration

	now func() time.Time // time.Now unless a test sets it

	// mu protects the following.
	mu       sync.Mutex
	table    GPUTable
	have     bool
	fetching chan struct{} // closed when the refresh in flight ends; nil when none
	since    time.Time     // when the refresh in flight started
	lastErr  error         // of the last refresh
}

// Err is the last refresh's error (nil after a success), for the caller
// to log or count: the cache itself never logs.
func (uc *UsageCache) Err() error {
	uc.mu.Lock()
	defer uc.mu.Unlock()
	return uc.lastErr
}

// Lookup returns the GPUs user and account hold.
func (uc *UsageCache) Lookup(ctx context.Context, user, account string) Usage {
	now := time.Now
	if uc.now != nil {
		now = uc.now
	}
	ttl, wait := uc.TTL, uc.Wait
	if ttl <= 0 {
		ttl = 15 * time.Second
	}
	if wait <= 0 {
		wait = 300 * time.Millisecond
	}
	uc.mu.Lock()
	if uc.have && now().Sub(uc.table.At) < ttl {
		u := usageOf(uc.table, user, account)
		uc.mu.Unlock()
		return u
	}
	done := uc.fetching
	switch {
	case done == nil:
		done = make(chan struct{})
		uc.fetching, uc.since = done, now()
		go uc.refresh(done, now)
	case now().Sub(uc.since) >= wait:
		// Slurm is already slow for an earlier login: do not make this
		// one wait too.
		uc.mu.Unlock()
		return Usage{}
	}
	uc.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return Usage{}
	case <-ctx.Done():
		return Usage{}
	}
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if uc.have && now().Sub(uc.table.At) < ttl {
		return usageOf(uc.table, user, account)
	}
	return Usage{}
}

// refresh reads the table once; it outlives the lookup that started it
// so the next login finds a fresh table.
func (uc *UsageCache) refresh(done chan struct{}, now func() time.Time) {
	t, err := uc.Client.RunningGPUs(context.Background())
	uc.mu.Lock()
	uc.lastErr = err
	if err == nil {
		t.At = now()
		uc.table, uc.have = t, true
	}
	uc.fetching = nil
	uc.mu.Unlock()
	close(done)
}

func usageOf(t GPUTable, user, account string) Usage {
	return Usage{User: t.ByUser[user], Account: t.ByAccount[account], Known: true}
}

// ErrUsageUnknown: Slurm did not answer in time, so the GPUs held are not
// known.
var ErrUsageUnknown = errors.New("GPU use unknown: Slurm did not answer in time")

// GPUsHeld is Lookup in the form login banners ask (the gateway's
// GPUUsage): the counts, or ErrUsageUnknown.
func (uc *UsageCache) GPUsHeld(ctx context.Context, user, account string) (userGPUs, accountGPUs int, err error) {
	u := uc.Lookup(ctx, user, account)
	if !u.Known {
		return 0, 0, ErrUsageUnknown
	}
	return u.User, u.Account, nil
}
