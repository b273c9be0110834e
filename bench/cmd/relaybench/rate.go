package main

// New sessions per second: concurrent logins through each path, with the
// gateway's and sshd's CPU per session.

import (
	"context"
	"log"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"golang.org/x/crypto/ssh"
)

// login is one new session: key exchange, login, a session running
// `true`, close. Go's client, so the bench's own cost is the same on every
// path and no ssh process is forked per login.
func (b *bench) login(ctx context.Context, p string) error {
	addr, key := b.target(p)
	c, err := harness.DialSSH(ctx, addr, b.user.Name, key, ssh.PublicKeys(b.user.Signer))
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run("true")
}

// rate: new sessions per second with rateWorkers concurrent logins, each
// path for rateSeconds split in two interleaved halves. With prof set
// (a file prefix), only the frontdoor path runs and the gateway is
// profiled meanwhile.
func (b *bench) rate(ctx context.Context, r *result, prof string) error {
	type acc struct {
		n           int64
		secs        float64
		proxy, sshd float64
		errs        int64
		firstErr    error
	}
	res := map[string]*acc{}
	rev := slices.Clone(paths)
	slices.Reverse(rev)
	order := append(slices.Clone(paths), rev...)
	half := time.Duration(b.o.rateSeconds / 2 * float64(time.Second))
	if prof != "" {
		order, half = []string{pathFrontdoor}, 8*time.Second
	}
	for _, p := range order {
		a := res[p]
		if a == nil {
			a = &acc{}
			res[p] = a
		}
		if err := b.settle(ctx); err != nil {
			return err
		}
		before, err := b.cpuNow()
		if err != nil {
			return err
		}
		var done atomic.Int64
		var errs atomic.Int64
		var errOnce sync.Once
		var wg sync.WaitGroup
		stopAt := time.Now().Add(half)
		var profErr error
		var profWG sync.WaitGroup
		if prof != "" {
			profWG.Add(1)
			go func() { defer profWG.Done(); profErr = b.captureProfiles(ctx, prof, 6) }()
		}
		start := time.Now()
		for range b.o.rateWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stopAt) {
					lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					err := b.login(lctx, p)
					cancel()
					if err != nil {
						errs.Add(1)
						errOnce.Do(func() { a.firstErr = err })
						continue
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		el := time.Since(start).Seconds()
		profWG.Wait()
		if profErr != nil {
			return profErr
		}
		if err := b.settle(ctx); err != nil {
			return err
		}
		after, err := b.cpuNow()
		if err != nil {
			return err
		}
		a.n += done.Load()
		a.errs += errs.Load()
		a.secs += el
		a.sshd += after.sshd - before.sshd
		a.proxy += after.proxy[p] - before.proxy[p]
	}
	if prof != "" {
		return nil
	}
	for _, p := range paths {
		a := res[p]
		row := rateRow{Path: p, Workers: b.o.rateWorkers, Seconds: a.secs, Sessions: a.n, Errors: a.errs}
		if a.firstErr != nil {
			row.FirstError = a.firstErr.Error()
		}
		if a.n > 0 {
			row.PerSecond = float64(a.n) / a.secs
			row.SSHDCPUms = a.sshd / float64(a.n) * 1000
			row.ProxyCPUms = a.proxy / float64(a.n) * 1000
		}
		r.Rate = append(r.Rate, row)
	}
	for i := range r.Rate {
		r.Rate[i].Ratio = r.Rate[i].PerSecond / r.Rate[0].PerSecond
		log.Printf("new sessions %-9s %.1f/s ×%.2f (errors %d) proxy %.1f ms sshd %.1f ms per session", r.Rate[i].Path, r.Rate[i].PerSecond, r.Rate[i].Ratio, r.Rate[i].Errors, r.Rate[i].ProxyCPUms, r.Rate[i].SSHDCPUms)
	}
	return nil
}
