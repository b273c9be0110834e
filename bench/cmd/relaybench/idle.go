package main

// Idle sessions: the gateway's memory and goroutines per open session that
// moves no data.

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"golang.org/x/crypto/ssh"
)

// idle opens sessions through the gateway (a command each that waits on
// its stdin, so it ends with the session instead of outliving it:
// connected, authenticated, one open session channel, no data), growing to
// each count in turn, and records the gateway's memory and goroutine growth
// per session. A count the machine cannot hold (processes, memory) is
// skipped with the reason recorded, not silently.
func (b *bench) idle(ctx context.Context, r *result) error {
	pid := b.gw().cmd.Process.Pid
	rssBefore, err := rssKiB(pid)
	if err != nil {
		return err
	}
	liveBefore, gBefore, err := liveMemory(ctx, b.gw().admin)
	if err != nil {
		return err
	}
	memBefore := memAvailableKiB()
	var mu sync.Mutex
	var clients []*ssh.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, n := range b.o.idle {
		row := idleRow{Sessions: n, LoadStart: loadNow()}
		have := len(clients)
		// Each node session is 3 processes (sshd monitor, sshd user
		// child, sleep); keep 3,000 pids and 2 GiB spare for everyone
		// else on the machine.
		if need, free := 3*(n-have)+3000, pidsFree(); need > free {
			row.Skipped = fmt.Sprintf("needs ~%d more processes, %d pids free", need, free)
		} else if have > 0 {
			perSess := float64(memBefore-memAvailableKiB()) / float64(have)
			if need, avail := perSess*float64(n-have)+2<<20, float64(memAvailableKiB()); need > avail {
				row.Skipped = fmt.Sprintf("needs ~%.0f MiB more memory (%.0f KiB per session machine-wide), %.0f MiB available", need/1024, perSess, avail/1024)
			}
		}
		if row.Skipped != "" {
			log.Printf("idle %d: SKIPPED: %s", n, row.Skipped)
			r.Idle = append(r.Idle, row)
			continue
		}
		start := time.Now()
		next := make(chan int)
		var wg sync.WaitGroup
		var firstErr error
		var errOnce sync.Once
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					c, err := harness.DialSSH(ctx, b.gw().addr, b.user.Name, b.gw().hostKey, ssh.PublicKeys(b.user.Signer))
					if err == nil {
						var s *ssh.Session
						if s, err = c.NewSession(); err == nil {
							// A stdin that stays open: without one, x/crypto
							// sends EOF at once and cat (and the session)
							// ends. Closing the client ends it.
							if _, err = s.StdinPipe(); err == nil {
								err = s.Start("cat > /dev/null")
							}
						}
						mu.Lock()
						clients = append(clients, c)
						mu.Unlock()
					}
					if err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("session %d: %w", i, err) })
					}
				}
			}()
		}
	feed:
		for i := have; i < n; i++ {
			select {
			case next <- i:
			case <-ctx.Done():
				break feed
			}
			if firstErr != nil {
				break
			}
		}
		close(next)
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		liveAfter, gAfter, err := liveMemory(ctx, b.gw().admin)
		if err != nil {
			return err
		}
		rssAfter, err := rssKiB(pid)
		if err != nil {
			return err
		}
		if b.o.profile {
			if err := b.saveIdleProfiles(ctx, r, n); err != nil {
				return err
			}
		}
		row.OpenSeconds = time.Since(start).Seconds()
		row.RSSKiB = float64(rssAfter-rssBefore) / float64(n)
		row.LiveKiB = (liveAfter - liveBefore) / 1024 / float64(n)
		row.Goroutines = (gAfter - gBefore) / float64(n)
		row.MachineKiB = float64(memBefore-memAvailableKiB()) / float64(n)
		row.LoadEnd = loadNow()
		r.Idle = append(r.Idle, row)
		log.Printf("idle %d: rss %.1f KiB, live %.1f KiB, %.1f goroutines per session (machine-wide %.0f KiB)", n, row.RSSKiB, row.LiveKiB, row.Goroutines, row.MachineKiB)
	}
	return nil
}

// liveMemory forces GCs in the gateway (through its pprof endpoint) and
// returns its live Go heap (allocated objects) plus goroutine stacks, in
// bytes, and its goroutines. Several cycles: each GC halves the stacks of
// idle goroutines that grew during the key exchange, so the figure is the
// steady state of a session that stays idle.
func liveMemory(ctx context.Context, admin string) (bytes, goroutines float64, err error) {
	for range 4 {
		if _, err := harness.AdminGet(ctx, admin, "/debug/pprof/heap?gc=1"); err != nil {
			return 0, 0, err
		}
	}
	m, err := harness.AdminGet(ctx, admin, "/metrics")
	if err != nil {
		return 0, 0, err
	}
	vals := map[string]float64{}
	for _, line := range strings.Split(m, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && !strings.HasPrefix(line, "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				vals[f[0]] = v
			}
		}
	}
	return vals["go_memstats_heap_alloc_bytes"] + vals["go_memstats_stack_inuse_bytes"], vals["go_goroutines"], nil
}
