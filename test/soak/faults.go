package soak

// The faults, each injected while the load runs, taken away, and waited
// out; what it cost is read from the Recorder's window [injection, back to
// normal) and set against the goal. A fault's own figures (how fast a
// gateway noticed, how long a drain took) go in FaultResult.Measured.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
	"github.com/frontdoor-hpc/frontdoor/test/stack"
)

// Fault names (Config.Faults), in the order `make soak` runs them.
const (
	FaultNodeKill    = "node-kill"
	FaultGatewayKill = "gateway-kill"
	FaultDCStop      = "dc-stop"
	FaultSlurmDown   = "slurm-down"
	FaultS3Down      = "s3-down"
	FaultGossipLoss  = "gossip-loss"
	FaultPartition   = "partition"
	FaultDisk        = "disk-full"
	FaultClock       = "clock-jump"
)

// Faults lists every fault, in the order a full soak injects them.
// The gateway crash comes after the directory outage: a restarted
// gateway's identity cache is empty, which would make the outage a
// different fault (RELIABILITY.md says what that costs). The clock jump
// comes last: what it leaves behind in the gateways' shared state lasts
// about as long as the clock was ahead, longer than one fault's window.
var Faults = []string{FaultNodeKill, FaultDCStop, FaultSlurmDown, FaultS3Down, FaultGossipLoss,
	FaultPartition, FaultDisk, FaultGatewayKill, FaultClock}

var faults = map[string]func(context.Context, *run) FaultResult{
	FaultNodeKill:    faultNodeKill,
	FaultGatewayKill: faultGatewayKill,
	FaultDCStop:      faultDCStop,
	FaultSlurmDown:   faultSlurmDown,
	FaultS3Down:      faultS3Down,
	FaultGossipLoss:  faultGossipLoss,
	FaultPartition:   faultPartition,
	FaultDisk:        faultDisk,
	FaultClock:       faultClock,
}

func checkFaults(names []string) error {
	for _, n := range names {
		if faults[n] == nil {
			return fmt.Errorf("unknown fault %q (known: %s)", n, strings.Join(Faults, ", "))
		}
	}
	return nil
}

// deadNodeBound is the promise of the dead-node time: a node is out of
// routing cluster.node_dead_after (4 s) after its last heartbeat; one
// heartbeat interval (1 s) may have passed since, and the watch polls.
const deadNodeBound = 4*time.Second + time.Second + time.Second

// finish fills the window figures and the time back to normal.
func (r *run) finish(ctx context.Context, fr *FaultResult) {
	err := r.settle(ctx, 3*time.Minute)
	back := time.Now()
	fr.RecoverS = back.Sub(fr.End).Seconds()
	if err != nil {
		fr.Notes = append(fr.Notes, "not back to normal within 3 minutes: "+err.Error())
	}
	fr.During = summarize(r.rec, r.smp, fr.Start, back)
}

// signals are the gateways' counters and log positions before a fault.
type signals struct {
	counters map[string]float64
	logs     map[string]logMark
	pids     map[string]int
}

// counterNames are the gateway counters a fault's cost shows in.
var counterNames = []string{"frontdoor_connections_refused_total", "frontdoor_auth_attempts_total",
	"frontdoor_backend_failures_total", "frontdoor_gossip_refused_total", "frontdoor_audit_s3_dropped_events_total",
	"frontdoor_audit_dropped_events_total", "frontdoor_audit_write_errors_total"}

func (r *run) signals(ctx context.Context) signals {
	sg := signals{counters: map[string]float64{}, logs: r.gatewayLogOffsets(), pids: map[string]int{}}
	for _, g := range r.st.Gateways {
		sg.pids[g.Name] = g.PID()
		m, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(m, "\n") {
			for _, name := range counterNames {
				if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
					f := strings.Fields(line)
					v, _ := strconv.ParseFloat(f[len(f)-1], 64)
					sg.counters[g.Name+" "+f[0]] = v
				}
			}
		}
	}
	return sg
}

// since is what changed from before to now: counters that grew (a
// gateway restarted meanwhile counts from zero), and the warnings and
// errors each gateway logged, by message.
func (r *run) since(ctx context.Context, before signals) (map[string]float64, map[string]int) {
	now := r.signals(ctx)
	grew := map[string]float64{}
	for k, v := range now.counters {
		gw, _, _ := strings.Cut(k, " ")
		d := v - before.counters[k]
		if now.pids[gw] != before.pids[gw] {
			d = v
		}
		if d > 0 && !strings.Contains(k, `result="ok"`) {
			grew[k] = d
		}
	}
	warned := map[string]int{}
	for gw, m := range before.logs {
		for _, l := range linesSince(m) {
			var e struct{ Level, Msg, Reason string }
			if json.Unmarshal([]byte(l), &e) != nil || (e.Level != "WARN" && e.Level != "ERROR") || e.Msg == "audit" {
				continue
			}
			warned[gw+": "+clip(e.Msg, 100)]++
		}
	}
	return grew, warned
}

// verdict sets Met and Verdict from the misses (none: met).
func (fr *FaultResult) verdict(summary string, misses ...string) {
	var m []string
	for _, s := range misses {
		if s != "" {
			m = append(m, s)
		}
	}
	fr.Met = len(m) == 0
	fr.Verdict = summary
	if !fr.Met {
		fr.Verdict = "MISSED: " + strings.Join(m, "; ") + ". " + summary
	}
}

func missIf(cond bool, format string, args ...any) string {
	if cond {
		return fmt.Sprintf(format, args...)
	}
	return ""
}

// heldByNode counts the open held sessions per node (and per gateway).
func (r *run) heldBy(key func(HeldState) string) map[string]int {
	out := map[string]int{}
	for _, s := range r.holds.States() {
		if s.Up {
			out[key(s)]++
		}
	}
	return out
}

// watchGateways polls every gateway's /v1/nodes until cond holds there,
// and returns, per gateway, how long after start that was (-1: not
// within limit).
func (r *run) watchGateways(ctx context.Context, start time.Time, limit time.Duration, cond func([]stack.NodeView) bool) map[string]float64 {
	out := map[string]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range r.st.Gateways {
		wg.Go(func() {
			took := -1.0
			for time.Since(start) < limit && ctx.Err() == nil {
				if nodes, err := g.Nodes(ctx); err == nil && cond(nodes) {
					took = time.Since(start).Seconds()
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			mu.Lock()
			out[g.Name] = took
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func nodeIs(name string, want func(stack.NodeView) bool) func([]stack.NodeView) bool {
	return func(ns []stack.NodeView) bool {
		for _, n := range ns {
			if n.Name == name {
				return want(n)
			}
		}
		return false
	}
}

func worst(m map[string]float64) float64 {
	w := 0.0
	for _, v := range m {
		if v < 0 {
			return -1
		}
		w = max(w, v)
	}
	return w
}

// faultNodeKill: a login node crashes. Its sshd (the listener and every
// session process under it) and its agent get SIGKILL at once.
func faultNodeKill(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultNodeKill, Measured: map[string]any{},
		Goal: "only that node's sessions end; new logins go elsewhere within the dead-node time (node_dead_after 4 s)"}
	victim := r.st.Nodes[0]
	before := r.heldBy(func(s HeldState) string { return s.Node })
	fr.Measured["held_before"] = before
	pids := harness.Descendants(victim.SSHD().PID())
	fr.Start = time.Now()
	victim.Kill()
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	fr.Measured["kill_took_s"] = time.Since(fr.Start).Seconds()
	dead := r.watchGateways(ctx, fr.Start, 30*time.Second, nodeIs(victim.Name, func(n stack.NodeView) bool { return !n.Alive }))
	fr.Measured["dead_at_gateways_s"] = dead
	// Its users come back (elsewhere) meanwhile.
	sleepCtx(ctx, time.Until(fr.Start.Add(30*time.Second)))
	windowEnd := time.Now()
	fr.End = time.Now()
	if err := victim.Revive(ctx); err != nil {
		fr.Notes = append(fr.Notes, "revive: "+err.Error())
	}
	back := r.watchGateways(ctx, fr.End, time.Minute, nodeIs(victim.Name, func(n stack.NodeView) bool { return n.Alive && n.SSHDUp }))
	fr.Measured["revived_usable_at_gateways_s"] = back

	ends := r.rec.Ends(fr.Start, windowEnd)
	onVictim, elsewhere := 0, 0
	for _, e := range ends {
		if e.Node == victim.Name {
			onVictim++
		} else {
			elsewhere++
		}
	}
	fr.Measured["sessions_ended_on_node"] = onVictim
	fr.Measured["sessions_ended_elsewhere"] = elsewhere
	churn := r.rec.Logins(fr.Start, windowEnd, isChurn)
	landed, slow := 0, 0.0
	knownDead := fr.Start.Add(time.Duration(worst(dead) * float64(time.Second)))
	for _, l := range churn {
		if l.OK && l.Node == victim.Name && l.Start.After(knownDead) {
			landed++
		}
		if l.Start.Before(fr.Start.Add(deadNodeBound)) {
			slow = max(slow, l.Took.Seconds())
		}
	}
	fr.Measured["logins_on_dead_node_after_known"] = landed
	fr.Measured["slowest_login_within_dead_time_s"] = slow
	rec := r.rec.Logins(fr.Start, windowEnd, func(l Login) bool { return l.Reconnect && l.PrevNode == victim.Name })
	fr.Measured["reconnects_of_its_users"] = len(rec)
	fr.Measured["reconnects_failed"] = failed(rec)
	fr.Measured["fail_reasons"] = failReasons(churn)
	fr.Measured["fail_reasons_reconnects"] = failReasons(rec)
	r.finish(ctx, &fr)
	w := worst(dead)
	fr.verdict(fmt.Sprintf("%d of its %d sessions ended, %d elsewhere; out of routing at every gateway after %.1f s; %d new logins failed, slowest %.2f s; %d reconnects, %d failed",
		onVictim, before[victim.Name], elsewhere, w, failed(churn), slow, len(rec), failed(rec)),
		missIf(elsewhere > 0, "%d sessions on other nodes ended", elsewhere),
		missIf(failed(churn) > 0, "%d new logins failed", failed(churn)),
		missIf(w < 0 || w > deadNodeBound.Seconds(), "a gateway still counted the node after %.1f s", w),
		missIf(landed > 0, "%d logins landed on the dead node", landed))
	return fr
}

// faultGatewayKill: a gateway crashes (kill -9); its users reconnect
// through the other; systemd starts it again 10 s later.
func faultGatewayKill(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultGatewayKill, Measured: map[string]any{},
		Goal: "its users reconnect through the other and land on their node; nothing else is lost"}
	victim := r.st.Gateways[0]
	before := r.heldBy(func(s HeldState) string { return s.Gateway })
	fr.Measured["held_before"] = before
	// A user whose sessions are all on one node has that node as their
	// node; one spread over several (a node died under them earlier, and
	// their sessions came back through both gateways at once) has none to
	// land on.
	nodesOf := map[string]map[string]bool{}
	for _, s := range r.holds.States() {
		if s.Up {
			if nodesOf[s.User] == nil {
				nodesOf[s.User] = map[string]bool{}
			}
			nodesOf[s.User][s.Node] = true
		}
	}
	split := 0
	for _, ns := range nodesOf {
		if len(ns) > 1 {
			split++
		}
	}
	fr.Measured["users_on_several_nodes_before"] = split
	fr.Start = time.Now()
	victim.Kill()
	sleepCtx(ctx, 10*time.Second)
	fr.End = time.Now()
	if err := victim.Start(ctx); err != nil {
		fr.Notes = append(fr.Notes, "restart: "+err.Error())
	}
	fr.Measured["restart_listening_s"] = time.Since(fr.End).Seconds()
	if err := r.st.WaitNodesHealthy(ctx, victim, time.Minute); err != nil {
		fr.Notes = append(fr.Notes, err.Error())
	}
	fr.Measured["restarted_routing_s"] = time.Since(fr.End).Seconds()
	sleepCtx(ctx, time.Until(fr.Start.Add(40*time.Second)))
	windowEnd := time.Now()

	ends := r.rec.Ends(fr.Start, windowEnd)
	through, other := 0, 0
	for _, e := range ends {
		if e.Gateway == victim.Name {
			through++
		} else {
			other++
		}
	}
	fr.Measured["sessions_ended_through_it"] = through
	fr.Measured["sessions_ended_through_other"] = other
	rec := r.rec.Logins(fr.Start, windowEnd, func(l Login) bool { return l.Kind == KindHold && l.Reconnect })
	same, moved := 0, 0
	for _, l := range rec {
		if !l.OK || len(nodesOf[l.User]) > 1 {
			continue
		}
		if l.Node == l.PrevNode {
			same++
		} else {
			moved++
		}
	}
	fr.Measured["reconnects"] = len(rec)
	fr.Measured["reconnects_failed"] = failed(rec)
	fr.Measured["reconnects_same_node"] = same
	fr.Measured["reconnects_other_node"] = moved // of users whose sessions were on one node
	churn := r.rec.Logins(fr.Start, windowEnd, isChurn)
	fo := 0
	for _, l := range churn {
		if l.FailedOver {
			fo++
		}
	}
	fr.Measured["new_logins_failed_over"] = fo
	fr.Measured["fail_reasons"] = failReasons(churn)
	fr.Measured["fail_reasons_reconnects"] = failReasons(rec)
	// The restarted gateway learns its peer's sessions back.
	agreed, last := r.waitViewsAgree(ctx, fr.End, 2*time.Minute)
	fr.Measured["views_agree_after_restart_s"] = agreed
	if agreed < 0 {
		fr.Measured["views_last"] = last
	}
	r.finish(ctx, &fr)
	fr.verdict(fmt.Sprintf("%d sessions through it ended, %d through the other; %d reconnects (%d failed), %d on their node, %d elsewhere; %d new logins failed over, %d failed; back in %.1f s",
		through, other, len(rec), failed(rec), same, moved, fo, failed(churn), fr.Measured["restarted_routing_s"]),
		missIf(other > 0, "%d sessions through the other gateway ended", other),
		missIf(moved > 0, "%d users landed on another node", moved),
		missIf(failed(rec) > 0, "%d reconnects failed", failed(rec)),
		missIf(failed(churn) > 0, "%d new logins failed", failed(churn)))
	return fr
}

// faultDCStop: the only domain controller hangs (SIGSTOP) for 60 s.
func faultDCStop(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultDCStop, Measured: map[string]any{},
		Goal: "key logins go on (cache); password logins fail within the auth timeout with a clear message; logins resume within 5 s of the DC's return; no account ends banned"}
	fr.Start = time.Now()
	if err := r.st.DC.Pause(); err != nil {
		fr.verdict("", "pause: "+err.Error())
		return fr
	}
	sleepCtx(ctx, 60*time.Second)
	r.st.DC.Resume()
	fr.End = time.Now()
	sleepCtx(ctx, 30*time.Second)

	key := r.rec.Logins(fr.Start, fr.End, func(l Login) bool { return isChurn(l) && l.Method == "publickey" })
	pw := r.rec.Logins(fr.Start, fr.End, func(l Login) bool { return isChurn(l) && l.Method == "password" })
	fr.Measured["key_logins"], fr.Measured["key_logins_failed"] = len(key), failed(key)
	fr.Measured["key_login_p99_s"] = percentile(latencies(key), 99)
	var pwFail []float64
	messages := map[string]int{}
	failedUsers := map[string]bool{}
	for _, l := range pw {
		if !l.OK {
			pwFail = append(pwFail, l.Took.Seconds())
			messages[firstNonEmpty(l.Banner, "(no message) "+shortReason(l.Err))]++
			failedUsers[l.User] = true
		}
	}
	fr.Measured["password_logins"], fr.Measured["password_logins_failed"] = len(pw), len(pwFail)
	fr.Measured["password_failure_p50_s"] = percentile(pwFail, 50)
	fr.Measured["password_failure_max_s"] = maxOf(pwFail)
	fr.Measured["password_failure_messages"] = messages
	// The first password login that worked after the DC came back, per
	// gateway.
	resumed := map[string]float64{}
	for _, l := range r.rec.Logins(fr.End, time.Now(), func(l Login) bool { return isChurn(l) && l.Method == "password" && l.OK }) {
		if _, ok := resumed[l.Gateway]; !ok {
			resumed[l.Gateway] = l.Start.Add(l.Took).Sub(fr.End).Seconds()
		}
	}
	fr.Measured["password_logins_resumed_after_s"] = resumed
	// Every account refused during the outage tries its right password
	// once more: a ban would refuse it.
	var users []*User
	for _, u := range r.load.Users {
		if failedUsers[u.Name] {
			users = append(users, u)
		}
	}
	banned := r.probeLogins(ctx, users, "password")
	fr.Measured["accounts_refused_during"] = len(users)
	fr.Measured["accounts_refused_after"] = banned
	// A refused account's user would stop typing a password; so do ours,
	// or every later fault would count this one's bans as its own.
	for _, b := range banned {
		name, _, _ := strings.Cut(b, ":")
		r.load.KeyOnly(name)
	}
	if len(banned) > 0 {
		fr.Notes = append(fr.Notes, fmt.Sprintf("the %d accounts refused afterwards log in with their keys for the rest of the run", len(banned)))
	}
	r.finish(ctx, &fr)
	auth := authTimeout(r)
	res := worst(resumed)
	if len(resumed) < len(r.st.Gateways) {
		res = -1
	}
	clear := 0
	for m, n := range messages {
		if strings.Contains(m, "frontdoor:") {
			clear += n
		}
	}
	fr.verdict(fmt.Sprintf("%d of %d key logins failed (p99 %.2f s); %d of %d password logins refused, in %.1f s at most (auth timeout %s), %d with a message; password logins back %.1f s after the DC; %d of %d accounts refused afterwards",
		failed(key), len(key), percentile(latencies(key), 99), len(pwFail), len(pw), maxOf(pwFail), auth, clear, res, len(banned), len(users)),
		missIf(failed(key) > 0, "%d key logins failed", failed(key)),
		missIf(maxOf(pwFail) > auth.Seconds(), "a password login took %.1f s to be refused", maxOf(pwFail)),
		missIf(clear < len(pwFail), "%d password refusals without a message saying why", len(pwFail)-clear),
		missIf(res < 0 || res > 5, "password logins resumed %.1f s after the DC returned (per gateway %v)", res, resumed),
		missIf(len(banned) > 0, "%d accounts still refused after the outage (%v)", len(banned), firstN(banned, 5)))
	return fr
}

// authTimeout is the gateways' auth deadline (gateway.auth_timeout: 0
// means min(30s, login_grace_time 1m)).
func authTimeout(*run) time.Duration { return 30 * time.Second }

// probeLogins logs each user in once (four at a time) and returns those
// refused.
func (r *run) probeLogins(ctx context.Context, users []*User, method string) []string {
	var mu sync.Mutex
	var refused []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, u := range users {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			l := r.load.LoginOnce(ctx, KindProbe, i, u, method)
			r.rec.login(l)
			if !l.OK {
				mu.Lock()
				refused = append(refused, u.Name+": "+firstNonEmpty(l.Banner, shortReason(l.Err)))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return refused
}

// faultSlurmDown: slurmctld and slurmdbd stop for 60 s; meanwhile a user
// changes lab in AD, which the Slurm sync must carry over once they are
// back.
func faultSlurmDown(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultSlurmDown, Measured: map[string]any{},
		Goal: "logins go on; the banner says the figures are unavailable; the Slurm sync resumes and converges"}
	sl := r.st.Slurm
	if sl == nil {
		fr.verdict("", "the stack runs without Slurm")
		return fr
	}
	syncLog := logOffset(r.st.SlurmSync.Log())
	fr.Start = time.Now()
	sl.StopDaemon(slurmh.SlurmCtld)
	sl.StopDaemon(slurmh.SlurmDBD)
	fr.Measured["stop_took_s"] = time.Since(fr.Start).Seconds()
	// A vision-lab user joins the NLP lab meanwhile.
	mover := r.load.Users[3].Name
	if err := r.st.DC.AddMember(ctx, "nlp-lab", mover); err != nil {
		fr.Notes = append(fr.Notes, "AD change: "+err.Error())
	}
	if err := r.st.DC.RemoveMember(ctx, "vision-lab", mover); err != nil {
		fr.Notes = append(fr.Notes, "AD change: "+err.Error())
	}
	// Interactive logins show their banner: every 5 s, one.
	var banners []string
	var bannerTook []float64
	unknown := 0
	for time.Since(fr.Start) < 60*time.Second && ctx.Err() == nil {
		u := r.load.Users[0] // NLP lab: a Slurm grant, GPU figures in the banner
		l, text := r.load.BannerOnce(ctx, 0, u)
		r.rec.login(l)
		line := gpuLine(text)
		banners = append(banners, fmt.Sprintf("+%.0fs %s", time.Since(fr.Start).Seconds(), line))
		if l.OK {
			bannerTook = append(bannerTook, l.Took.Seconds())
		}
		if strings.Contains(line, "unknown") {
			unknown++
		}
		sleepCtx(ctx, 5*time.Second)
	}
	fr.Measured["banners"] = banners
	fr.Measured["banner_login_max_s"] = maxOf(bannerTook)
	fr.End = time.Now()
	for _, d := range []string{slurmh.SlurmDBD, slurmh.SlurmCtld} {
		if err := sl.StartDaemon(ctx, d); err != nil {
			fr.Notes = append(fr.Notes, "restart "+d+": "+err.Error())
		}
	}
	fr.Measured["restart_took_s"] = time.Since(fr.End).Seconds()
	converged := -1.0
	var lastPlan string
	harness.WaitFor(ctx, 3*time.Minute, func() error {
		out, err := exec.CommandContext(ctx, r.st.Gateways[0].Process.Path(), "slurm", "plan", "--config", r.st.Gateways[0].Config).CombinedOutput()
		lastPlan = string(out)
		if err != nil || !strings.Contains(lastPlan, "nothing to do") {
			return fmt.Errorf("plan: %v %s", err, out)
		}
		converged = time.Since(fr.End).Seconds()
		return nil
	})
	fr.Measured["sync_converged_after_s"] = converged
	if converged < 0 {
		fr.Measured["last_plan"] = lastPlan
	}
	fr.Measured["sync_log"] = syncLines(syncLog)
	r.finish(ctx, &fr)
	during := r.rec.Logins(fr.Start, fr.End, isChurn)
	fr.verdict(fmt.Sprintf("%d of %d new logins failed; %d of %d banners said the GPU figures are unknown (slowest banner login %.2f s); the sync converged %.0f s after Slurm returned",
		failed(during), len(during), unknown, len(banners), maxOf(bannerTook), converged),
		missIf(failed(during) > 0, "%d logins failed", failed(during)),
		missIf(unknown == 0, "no banner said the figures are unavailable"),
		missIf(converged < 0, "the sync did not converge within 3 minutes"))
	return fr
}

// gpuLine is the banner's GPU line.
func gpuLine(banner string) string {
	for _, l := range strings.Split(banner, "\n") {
		if strings.Contains(l, "GPU") {
			return strings.TrimSpace(l)
		}
	}
	return "(no GPU line) " + strings.TrimSpace(banner)
}

// faultS3Down: the audit bucket is unreachable for 60 s (connections
// hang).
func faultS3Down(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultS3Down, Measured: map[string]any{},
		Goal: "nothing lost; the spool drains when S3 returns"}
	fr.Start = time.Now()
	r.s3.Cut()
	sleepCtx(ctx, 60*time.Second)
	spool := map[string]float64{}
	for _, g := range r.st.Gateways {
		if m, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics"); err == nil {
			spool[g.Name+" bytes"] = metricValue(m, "frontdoor_audit_s3_spool_bytes")
			spool[g.Name+" batches"] = metricValue(m, "frontdoor_audit_s3_spool_batches")
			spool[g.Name+" upload errors"] = metricSum(m, "frontdoor_audit_s3_uploads_total", `result="error"`)
		}
	}
	fr.Measured["spool_at_return"] = spool
	r.s3.Restore()
	fr.End = time.Now()
	drained := map[string]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range r.st.Gateways {
		wg.Go(func() {
			took := -1.0
			harness.WaitFor(ctx, 5*time.Minute, func() error {
				m, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
				if err != nil {
					return err
				}
				last := metricValue(m, "frontdoor_audit_s3_last_upload_timestamp_seconds")
				if b := metricValue(m, "frontdoor_audit_s3_spool_batches"); b > 0 || last < float64(fr.End.Unix()) {
					return fmt.Errorf("%.0f batches waiting", b)
				}
				took = time.Since(fr.End).Seconds()
				return nil
			})
			mu.Lock()
			drained[g.Name] = took
			mu.Unlock()
		})
	}
	wg.Wait()
	fr.Measured["spool_drained_after_s"] = drained
	r.finish(ctx, &fr)
	during := r.rec.Logins(fr.Start, fr.End, isChurn)
	w := worst(drained)
	fr.verdict(fmt.Sprintf("%d of %d new logins failed; spool at S3's return %v; drained %.0f s after it (per gateway %v); nothing lost: see the audit check",
		failed(during), len(during), spool, w, drained),
		missIf(failed(during) > 0, "%d logins failed", failed(during)),
		missIf(w < 0, "a spool did not drain within 5 minutes"))
	return fr
}

// faultGossipLoss: 30 % of the packets between the gateways' pools are
// lost for 60 s.
func faultGossipLoss(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultGossipLoss, Measured: map[string]any{},
		Goal: "logins and sessions go on; the gateways' shared state stays close and converges when the loss ends"}
	logs := r.gatewayLogOffsets()
	fr.Start = time.Now()
	if err := r.net.Loss(ctx, 30); err != nil {
		fr.verdict("", err.Error())
		return fr
	}
	sleepCtx(ctx, 60*time.Second)
	fr.Measured["views_at_end"] = r.views(ctx)
	agreeDuring, _ := r.viewsAgree(ctx)
	r.net.Heal(ctx)
	fr.End = time.Now()
	agreed, last := r.waitViewsAgree(ctx, fr.End, 2*time.Minute)
	fr.Measured["views_agreed_at_end_of_loss"] = agreeDuring
	fr.Measured["views_agree_after_s"] = agreed
	if agreed < 0 {
		fr.Measured["views_last"] = last
	}
	fr.Measured["pool_log"] = r.poolLog(logs)
	r.finish(ctx, &fr)
	during := r.rec.Logins(fr.Start, fr.End, isChurn)
	ends := r.rec.Ends(fr.Start, fr.End)
	fr.verdict(fmt.Sprintf("%d of %d new logins failed, %d held sessions ended; the gateways' session counts agreed at the end of the loss: %v, %.1f s after it",
		failed(during), len(during), len(ends), agreeDuring, agreed),
		missIf(failed(during) > 0, "%d logins failed", failed(during)),
		missIf(len(ends) > 0, "%d sessions ended", len(ends)),
		missIf(agreed < 0 || agreed > 10, "the gateways' views agreed %.1f s after the loss ended", agreed))
	return fr
}

// faultPartition: the gateways cannot reach each other for 60 s. During
// it a probe user works on login3 through gw2 only; the question is what
// gw1 believes, and how fast it learns once the partition heals.
func faultPartition(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultPartition, Measured: map[string]any{},
		Goal: "both sides keep serving; each side's view of the other's sessions and affinity heals within seconds of the partition's end"}
	logs := r.gatewayLogOffsets()
	gw1, gw2 := r.st.Gateways[0], r.st.Gateways[1]
	probe := r.probes[0]
	// A node the probe user has no affinity to yet.
	before, _ := explain(ctx, gw1, probe.Name)
	node := r.st.Nodes[len(r.st.Nodes)-1].Name
	for _, n := range r.st.Nodes {
		if !strings.Contains(before, "try "+n.Name) {
			node = n.Name
			break
		}
	}
	fr.Measured["probe_before"] = before
	fr.Start = time.Now()
	if err := r.net.Partition(ctx); err != nil {
		fr.verdict("", err.Error())
		return fr
	}
	sleepCtx(ctx, 15*time.Second)
	// The probe user logs in through gw2 to a node of their choice and
	// stays.
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	held, err := r.load.HoldOne(pctx, 1, probe, probe.Name+"+"+node)
	if err != nil {
		fr.Notes = append(fr.Notes, "probe session: "+err.Error())
	}
	sleepCtx(ctx, time.Until(fr.Start.Add(60*time.Second)))
	ex1, _ := explain(ctx, gw1, probe.Name)
	ex2, _ := explain(ctx, gw2, probe.Name)
	fr.Measured["gw1_explain_probe_during"] = ex1
	fr.Measured["gw2_explain_probe_during"] = ex2
	fr.Measured["views_at_end"] = r.views(ctx)
	r.net.Heal(ctx)
	fr.End = time.Now()
	agreed := -1.0
	var wg sync.WaitGroup
	wg.Go(func() {
		var last string
		agreed, last = r.waitViewsAgree(ctx, fr.End, 2*time.Minute)
		if agreed < 0 {
			fr.Notes = append(fr.Notes, "views still differ: "+last)
		}
	})
	healed := -1.0
	harness.WaitFor(ctx, 2*time.Minute, func() error {
		d, err := explain(ctx, gw1, probe.Name)
		if err != nil {
			return err
		}
		if !strings.Contains(d, "sticky, try "+node) {
			return fmt.Errorf("gw1: %s", d)
		}
		healed = time.Since(fr.End).Seconds()
		return nil
	})
	wg.Wait()
	fr.Measured["gw1_learned_affinity_after_s"] = healed
	fr.Measured["views_agree_after_s"] = agreed
	if held != nil {
		held()
	}
	fr.Measured["pool_log"] = r.poolLog(logs)
	r.finish(ctx, &fr)
	during := r.rec.Logins(fr.Start, fr.End, isChurn)
	ends := r.rec.Ends(fr.Start, fr.End)
	fr.verdict(fmt.Sprintf("%d of %d new logins failed, %d held sessions ended; during it gw1 said %q for the user gw2 had put on %s; after it ended gw1 learned that in %.1f s, and the gateways' session counts agreed in %.1f s",
		failed(during), len(during), len(ends), ex1, node, healed, agreed),
		missIf(failed(during) > 0, "%d logins failed", failed(during)),
		missIf(len(ends) > 0, "%d sessions ended", len(ends)),
		missIf(healed < 0 || healed > 10, "gw1 learned the affinity after %.1f s", healed),
		missIf(agreed < 0 || agreed > 10, "the gateways' session counts agreed after %.1f s", agreed))
	return fr
}

// explain is the decision line of a gateway's explain for user.
func explain(ctx context.Context, g *stack.Gateway, user string) (string, error) {
	body, err := harness.AdminGet(ctx, g.AdminSocket, "/v1/explain?user="+user)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "decision for ") {
			_, d, _ := strings.Cut(l, ": ")
			return d, nil
		}
	}
	return "", fmt.Errorf("no decision in %q", body)
}

// views is, per gateway, its /v1/nodes sessions and users per node.
func (r *run) views(ctx context.Context) map[string]any {
	out := map[string]any{}
	truth := r.heldBy(func(s HeldState) string { return s.Node })
	out["held_by_the_load"] = truth
	for _, g := range r.st.Gateways {
		var ns []struct {
			Name     string `json:"name"`
			Sessions int    `json:"sessions"`
			Users    int    `json:"users"`
			Here     int    `json:"sessions_here"`
		}
		if err := harness.AdminGetJSON(ctx, g.AdminSocket, "/v1/nodes", &ns); err != nil {
			out[g.Name] = err.Error()
			continue
		}
		v := map[string]string{}
		for _, n := range ns {
			v[n.Name] = fmt.Sprintf("sessions %d (here %d), users %d", n.Sessions, n.Here, n.Users)
		}
		if m, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics"); err == nil {
			v["gateways alive"] = strconv.Itoa(int(metricValue(m, "frontdoor_gossip_gateways")))
		}
		out[g.Name] = v
	}
	return out
}

// viewsAgree reports whether every gateway counts the same sessions on
// every node (within 2, or 5 %: logins in flight), and the views.
func (r *run) viewsAgree(ctx context.Context) (bool, string) {
	counts := map[string]map[string]int{}
	for _, g := range r.st.Gateways {
		nodes, err := g.Nodes(ctx)
		if err != nil {
			return false, g.Name + ": " + err.Error()
		}
		counts[g.Name] = map[string]int{}
		for _, n := range nodes {
			counts[g.Name][n.Name] = n.Sessions
		}
	}
	desc := fmt.Sprint(counts)
	for _, n := range r.st.Nodes {
		lo, hi := 1<<30, 0
		for _, c := range counts {
			lo, hi = min(lo, c[n.Name]), max(hi, c[n.Name])
		}
		if hi-lo > max(2, hi/20) {
			return false, desc
		}
	}
	return true, desc
}

// waitViewsAgree polls until the gateways' views agree, and returns how
// long after since that was (-1: not within limit) and the last views.
func (r *run) waitViewsAgree(ctx context.Context, since time.Time, limit time.Duration) (float64, string) {
	var last string
	for time.Since(since) < limit && ctx.Err() == nil {
		ok, desc := r.viewsAgree(ctx)
		last = desc
		if ok {
			return time.Since(since).Seconds(), desc
		}
		time.Sleep(250 * time.Millisecond)
	}
	return -1, last
}

// faultDisk: the filesystem under gw2's audit file and spool fills up for
// 45 s.
func faultDisk(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultDisk, Measured: map[string]any{},
		Goal: "logins go on; the loss is counted and logged"}
	if r.disk == nil {
		fr.verdict("", "no audit disk")
		return fr
	}
	g := r.st.Gateways[1]
	logs := logOffset(g.Log())
	m0, _ := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
	fileBefore, _ := os.Stat(g.Audit)
	fr.Start = time.Now()
	n, err := r.disk.Fill()
	fr.Measured["filled_bytes"] = n
	if err != nil {
		fr.Notes = append(fr.Notes, "fill: "+err.Error())
	}
	sleepCtx(ctx, 45*time.Second)
	fileFull, _ := os.Stat(g.Audit)
	m1, _ := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
	r.disk.Free()
	fr.End = time.Now()
	sleepCtx(ctx, 15*time.Second)
	fileAfter, _ := os.Stat(g.Audit)
	counted := map[string]float64{}
	for _, name := range []string{"frontdoor_audit_s3_dropped_events_total", "frontdoor_audit_dropped_events_total", "frontdoor_audit_write_errors_total"} {
		if d := metricSum(m1, name) - metricSum(m0, name); d > 0 {
			counted[name] = d
		}
	}
	fr.Measured["counted_in_metrics"] = counted
	// The spool's loss has its own counter; the audit file's must be
	// counted too (by the audit logger's counters).
	fileCounted := counted["frontdoor_audit_dropped_events_total"] + counted["frontdoor_audit_write_errors_total"]
	spoolCounted := counted["frontdoor_audit_s3_dropped_events_total"]
	logged := 0
	var sample []string
	for _, l := range linesSince(logs) {
		if strings.Contains(l, "audit") && (strings.Contains(l, "no space") || strings.Contains(l, "drop") || strings.Contains(l, "failed")) {
			logged++
			if len(sample) < 3 {
				sample = append(sample, clip(l, 300))
			}
		}
	}
	fr.Measured["logged_lines"] = logged
	fr.Measured["logged_sample"] = sample
	if fileBefore != nil && fileFull != nil && fileAfter != nil {
		fr.Measured["audit_file_bytes"] = []int64{fileBefore.Size(), fileFull.Size(), fileAfter.Size()}
	}
	through := r.rec.Logins(fr.Start, fr.End, func(l Login) bool { return isChurn(l) && l.Gateway == g.Name })
	resumed := fileAfter != nil && fileFull != nil && fileAfter.Size() > fileFull.Size()
	fr.Measured["audit_file_written_again"] = resumed
	r.finish(ctx, &fr)
	fr.verdict(fmt.Sprintf("%d of %d logins through %s failed; lost events counted: audit file %.0f, S3 spool %.0f; %d log lines about it; the audit file is written again afterwards: %v",
		failed(through), len(through), g.Name, fileCounted, spoolCounted, logged, resumed),
		missIf(failed(through) > 0, "%d logins failed", failed(through)),
		missIf(fileCounted == 0, "the audit file's loss was not counted (only logged)"),
		missIf(spoolCounted == 0, "the S3 spool's loss was not counted"),
		missIf(logged == 0, "the loss was not logged"),
		missIf(!resumed, "the audit file was not written after the disk had room again"))
	return fr
}

// faultClock: gw2's wall clock jumps 10 minutes ahead for 60 s, then
// back.
func faultClock(ctx context.Context, r *run) FaultResult {
	fr := FaultResult{Name: FaultClock, Measured: map[string]any{},
		Goal: "logins go on at both gateways; the sealed state a clock 10 min off sends is refused (replay window) only while the clock is off; once it is right again, what that gateway writes reaches the other within seconds"}
	if r.clockFile == "" {
		fr.verdict("", "no clock-offset gateway")
		return fr
	}
	gw1, g := r.st.Gateways[0], r.st.Gateways[1]
	logs := r.gatewayLogOffsets()
	m0 := r.refusals(ctx)
	fr.Start = time.Now()
	SetClockOffset(r.clockFile, 600)
	sleepCtx(ctx, 60*time.Second)
	fr.Measured["views_ahead"] = r.views(ctx)
	m1 := r.refusals(ctx)
	SetClockOffset(r.clockFile, 0)
	fr.End = time.Now()
	// Logins through it work again …
	back := -1.0
	harness.WaitFor(ctx, time.Minute, func() error {
		for _, l := range r.rec.Logins(fr.End, time.Now(), func(l Login) bool { return isChurn(l) && l.Gateway == g.Name && l.OK }) {
			back = l.Start.Add(l.Took).Sub(fr.End).Seconds()
			return nil
		}
		return errors.New("no login through it yet")
	})
	fr.Measured["logins_through_it_back_after_s"] = back
	// … and what it writes now must reach gw1: a probe user logs in
	// through it to a node of their choice.
	probe := r.probes[1]
	before, _ := explain(ctx, gw1, probe.Name)
	node := r.st.Nodes[0].Name
	for _, n := range r.st.Nodes {
		if !strings.Contains(before, "try "+n.Name) {
			node = n.Name
			break
		}
	}
	wrote := time.Now()
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	held, err := r.load.HoldOne(pctx, 1, probe, probe.Name+"+"+node)
	if err != nil {
		fr.Notes = append(fr.Notes, "probe session through "+g.Name+": "+err.Error())
	}
	learned := -1.0
	var said string
	harness.WaitFor(ctx, time.Minute, func() error {
		d, err := explain(ctx, gw1, probe.Name)
		said = d
		if err != nil || !strings.Contains(d, "sticky, try "+node) {
			return fmt.Errorf("gw1: %s %v", d, err)
		}
		learned = time.Since(wrote).Seconds()
		return nil
	})
	if held != nil {
		held()
	}
	fr.Measured["gw1_learned_new_affinity_after_s"] = learned
	fr.Measured["gw1_said"] = said
	m2 := r.refusals(ctx)
	fr.Measured["gossip_refused_while_ahead"] = diffMaps(m1, m0)
	fr.Measured["gossip_refused_after_back"] = diffMaps(m2, m1)
	fr.Measured["pool_log"] = r.poolLog(logs)
	through := r.rec.Logins(fr.Start, fr.End, func(l Login) bool { return isChurn(l) && l.Gateway == g.Name })
	other := r.rec.Logins(fr.Start, fr.End, func(l Login) bool { return isChurn(l) && l.Gateway != g.Name })
	fr.Measured["logins_through_it"], fr.Measured["logins_through_it_failed"] = len(through), failed(through)
	fr.Measured["fail_reasons_through_it"] = failReasons(through)
	r.finish(ctx, &fr)
	fr.verdict(fmt.Sprintf("%d of %d logins through %s failed while its clock was 10 min ahead (%v), %d of %d through the other; logins through it worked again %.1f s after the clock; an affinity it wrote %.0f s after its clock came back reached gw1 after %.1f s (gw1 said %q)",
		failed(through), len(through), g.Name, failReasons(through), failed(other), len(other), back, wrote.Sub(fr.End).Seconds(), learned, said),
		missIf(failed(through) > 0, "%d logins through the jumped gateway failed", failed(through)),
		missIf(failed(other) > 0, "%d logins through the other gateway failed", failed(other)),
		missIf(learned < 0 || learned > 10, "gw1 did not take what %s wrote after its clock came back within %s", g.Name, time.Minute))
	return fr
}

// refusals are every gateway's frontdoor_gossip_refused_total by gateway
// and reason.
func (r *run) refusals(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	for _, g := range r.st.Gateways {
		m, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(m, "\n") {
			if !strings.HasPrefix(line, "frontdoor_gossip_refused_total{") {
				continue
			}
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			out[g.Name+" "+strings.TrimPrefix(f[0], "frontdoor_gossip_refused_total")] = v
		}
	}
	return out
}

func diffMaps(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// A log file read from an offset on.
type logMark struct {
	path string
	off  int64
}

func logOffset(path string) logMark {
	st, err := os.Stat(path)
	if err != nil {
		return logMark{path: path}
	}
	return logMark{path: path, off: st.Size()}
}

func linesSince(m logMark) []string {
	f, err := os.Open(m.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(m.off, io.SeekStart); err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func (r *run) gatewayLogOffsets() map[string]logMark {
	out := map[string]logMark{}
	for _, g := range r.st.Gateways {
		out[g.Name] = logOffset(g.Log())
	}
	return out
}

// poolLog is what each gateway logged about the gateways' pool (members
// failed, suspected, joined, refused batches) since the marks: what each
// side believed, and when.
func (r *run) poolLog(marks map[string]logMark) map[string][]string {
	out := map[string][]string{}
	for gw, m := range marks {
		for _, l := range linesSince(m) {
			if !strings.Contains(l, "gateway_pool") && !strings.Contains(l, "sealed") && !strings.Contains(l, "refused gossip") {
				continue
			}
			if len(out[gw]) < 20 {
				out[gw] = append(out[gw], clip(l, 300))
			}
		}
	}
	return out
}

// syncLines are the Slurm sync's log lines since m (at most 20).
func syncLines(m logMark) []string {
	var out []string
	for _, l := range linesSince(m) {
		if len(out) < 20 {
			out = append(out, clip(l, 300))
		}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func maxOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
