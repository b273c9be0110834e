package main

// Profiles of the gateway (--profile): CPU and allocations during
// transfers and logins, heap and goroutines at each idle level.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// captureProfiles takes a CPU profile and an allocation profile (the
// allocations made during the window) of the gateway for secs seconds.
func (b *bench) captureProfiles(ctx context.Context, prefix string, secs int) error {
	dir := filepath.Join(b.o.out, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i, kind := range []string{"profile", "allocs"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := harness.AdminGet(ctx, b.gw().admin, fmt.Sprintf("/debug/pprof/%s?seconds=%d", kind, secs))
			if err != nil {
				errs[i] = err
				return
			}
			name := prefix + "-cpu.pprof"
			if kind == "allocs" {
				name = prefix + "-allocs.pprof"
			}
			errs[i] = os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}()
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}

// profiles: the gateway profiled during uploads, during downloads (aes128-gcm
// on both legs; transfers repeat until the profile window closes) and
// during the new-sessions test.
const profileMiB = 4096

func (b *bench) profiles(ctx context.Context, r *result) error {
	label := b.o.label
	if label == "" {
		label = "run"
	}
	for _, up := range []bool{true, false} {
		prefix := fmt.Sprintf("%s-%s", label, dirName(up))
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.captureProfiles(ctx, prefix, 6); cancel() }()
		var bytes float64
		for pctx.Err() == nil {
			if _, _, err := b.transfer(pctx, b.sshArgs(pathFrontdoor, ciphers[0].flag), up, profileMiB); err != nil {
				if pctx.Err() != nil {
					break
				}
				cancel()
				<-done
				return err
			}
			bytes += profileMiB
		}
		if err := <-done; err != nil {
			return err
		}
		r.Profiles = append(r.Profiles, "profiles/"+prefix+"-cpu.pprof", "profiles/"+prefix+"-allocs.pprof")
		log.Printf("profiled %s (%.0f MiB)", prefix, bytes)
	}
	prefix := label + "-logins"
	if err := b.rate(ctx, r, prefix); err != nil {
		return err
	}
	r.Profiles = append(r.Profiles, "profiles/"+prefix+"-cpu.pprof", "profiles/"+prefix+"-allocs.pprof")
	return nil
}

// saveIdleProfiles keeps the gateway's live heap and goroutines with n
// idle sessions: what an idle session holds, and where.
func (b *bench) saveIdleProfiles(ctx context.Context, r *result, n int) error {
	label := b.o.label
	if label == "" {
		label = "run"
	}
	dir := filepath.Join(b.o.out, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, kind := range []string{"heap", "goroutine"} {
		body, err := harness.AdminGet(ctx, b.gw().admin, "/debug/pprof/"+kind+"?gc=1")
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s-idle%d-%s.pprof", label, n, kind)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
		r.Profiles = append(r.Profiles, "profiles/"+name)
	}
	return nil
}
