// Command relaybench measures the gateway's relay against direct OpenSSH,
// against a plain TCP forwarder (socat: the floor any proxy has, what an
// NLB adds) and against a peer, sshpiper v1.6.1 (a packet-relaying Go SSH
// proxy, built from its source on first use: peer.go), all in the same
// run, paths interleaved: bulk throughput up and down for aes128-gcm and
// the OpenSSH client's default cipher, `ssh HOST true` latency with the same
// key exchange, CPU seconds per GiB for each proxy and for the node's sshd,
// gateway memory and goroutines per idle session, and new sessions per
// second. Everything is real: an OpenSSH sshd login node, the OpenSSH
// client, socat, sshpiper, and the gateway as its own process
// (bin/frontdoor).
//
// With --pinned the client and the node's sshd share CPU 0 and each proxy
// has CPU 1 to itself, as a gateway on its own machine would (pin.go).
// With --wait-load the run first waits, bounded, for the machine to be
// idle; the load average is recorded at every run and phase either way.
//
// Results go to OUT/relay.json (and OUT/relay-LABEL.json with --label),
// OUT/relay.md and OUT/relay.svg; with --profile, CPU and allocation profiles
// of the gateway during each transfer direction and during the new-session
// test go to OUT/profiles/. Figures are reported, not asserted: on a shared
// 2-core machine the client, gateway and sshd compete for CPU, and that is
// part of what is measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	out, bin, label string
	quick           bool
	sizeMiB, reps   int
	latN            int
	idle            []int
	rateSeconds     float64
	rateWorkers     int
	profile         bool
	only            string
	baselineBin     string
	baselineEnv     string
	pinned          bool
	peer            bool
	piperGit        string
	cryptoGit       string
	peerCache       string
	waitLoad        float64
	waitMax         time.Duration
	hold            bool
	traceRaw        bool
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bench/results", "directory for the results")
	flag.StringVar(&o.bin, "bin", "bin/frontdoor", "frontdoor binary")
	flag.StringVar(&o.label, "label", "", "also write relay-LABEL.json (e.g. before, after)")
	flag.BoolVar(&o.quick, "quick", false, "a run of a few minutes: 64 MiB transfers, 20 latency runs, 1,000 idle sessions, 4 s rate test")
	flag.IntVar(&o.sizeMiB, "size", 0, "MiB per transfer (default 256, quick 64)")
	flag.IntVar(&o.reps, "reps", 3, "transfers per direction, cipher and path (median reported)")
	flag.IntVar(&o.latN, "latency-runs", 0, "`ssh true` runs per path (default 100, quick 20)")
	idle := flag.String("idle", "", "idle-session counts, comma-separated (default 1000,5000; quick 1000)")
	flag.Float64Var(&o.rateSeconds, "rate-seconds", 0, "seconds per path for the new-sessions test (default 10, quick 4)")
	flag.IntVar(&o.rateWorkers, "rate-workers", 8, "concurrent logins in the new-sessions test")
	flag.BoolVar(&o.profile, "profile", false, "capture gateway CPU and allocation profiles (extra transfers, not measured)")
	flag.StringVar(&o.only, "only", "", "run only these phases, comma-separated: transfer,latency,rate,idle,profile,trace (trace: perf timelines of one transfer per path, only when named)")
	flag.StringVar(&o.baselineBin, "baseline-bin", "", "a second frontdoor binary (e.g. the build before a change), measured as path frontdoor-baseline in the same run")
	flag.StringVar(&o.baselineEnv, "baseline-env", "", "environment for the baseline gateway, comma-separated KEY=VALUE (e.g. GOMAXPROCS=1, to compare settings of one binary)")
	flag.BoolVar(&o.pinned, "pinned", false, "pin CPUs: the client and the node's sshd on CPU 0, each proxy on CPU 1 (a gateway on its own machine)")
	flag.BoolVar(&o.peer, "peer", true, "measure sshpiper "+piperVersion+" as a peer (path sshpiper), built from its source on first use")
	flag.StringVar(&o.piperGit, "sshpiper-git", piperGitDefault, "git repository (URL or directory) of github.com/tg123/sshpiper")
	flag.StringVar(&o.cryptoGit, "sshpiper-crypto-git", cryptoGitDefault, "git repository (URL or directory) of github.com/datacosmos-br/sshpiper.crypto")
	flag.StringVar(&o.peerCache, "peer-cache", "", "where the peer is built and kept (default: the user cache directory, frontdoor-relaybench/)")
	flag.Float64Var(&o.waitLoad, "wait-load", 0, "before measuring, wait until the 1-minute load average is below this (0: do not wait)")
	flag.DurationVar(&o.waitMax, "wait-max", 20*time.Minute, "the longest --wait-load waits; then the run measures anyway, and records the load")
	flag.BoolVar(&o.hold, "hold", false, "set up, print how to reach each path, and wait for ^C instead of measuring (to trace or profile by hand)")
	flag.BoolVar(&o.traceRaw, "trace-raw", false, "with the trace phase, also keep each transfer's timeline (perf script output) in OUT/relay-trace-PATH-DIR.txt")
	onlyCipher := flag.String("cipher", "", "measure only ciphers whose name contains this (e.g. aes128)")
	summarize := flag.Bool("summarize", false, "measure nothing: print the goals of the result files named as arguments (a series of runs) side by side, with their medians")
	flag.Parse()
	if *summarize {
		var names []string
		var results []*result
		for _, path := range flag.Args() {
			r, err := loadResult(path)
			if err != nil {
				log.Fatalf("relaybench: %v", err)
			}
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "relay-"), ".json"))
			results = append(results, r)
		}
		if len(results) == 0 {
			log.Fatal("relaybench: --summarize needs result files (relay-LABEL.json) as arguments")
		}
		fmt.Print(summarizeRuns(names, results))
		return
	}
	if *onlyCipher != "" {
		ciphers = slices.DeleteFunc(ciphers, func(c struct{ name, flag string }) bool { return !strings.Contains(c.name, *onlyCipher) })
	}
	if o.peer {
		paths = append(paths, pathPeer)
	}
	if o.baselineBin != "" {
		paths = append(paths, pathBaseline)
	}
	def := func(v *int, full, quick int) {
		if *v == 0 {
			*v = full
			if o.quick {
				*v = quick
			}
		}
	}
	def(&o.sizeMiB, 256, 64)
	def(&o.latN, 100, 20)
	if o.rateSeconds == 0 {
		o.rateSeconds = 10
		if o.quick {
			o.rateSeconds = 4
		}
	}
	if *idle == "" {
		*idle = "1000,5000"
		if o.quick {
			*idle = "1000"
		}
	}
	for _, s := range strings.Split(*idle, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			log.Fatalf("relaybench: bad --idle %q", *idle)
		}
		o.idle = append(o.idle, n)
	}
	// ^C or SIGTERM ends the run through its cleanup (gateway, socat,
	// sshd, cgroups, the source file).
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sig, 90*time.Minute)
	defer cancel()
	r, err := run(ctx, o)
	if err != nil {
		log.Fatalf("relaybench: %v", err)
	}
	if err := write(o, r); err != nil {
		log.Fatalf("relaybench: %v", err)
	}
}

func (o options) phase(name string) bool {
	if o.only == "" {
		// trace runs only when asked for; profile with --profile.
		return name != "trace" && (name != "profile" || o.profile)
	}
	for _, p := range strings.Split(o.only, ",") {
		if strings.TrimSpace(p) == name {
			return true
		}
	}
	return false
}

func write(o options, r *result) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if err := os.WriteFile(filepath.Join(o.out, "relay.json"), js, 0o644); err != nil {
		return err
	}
	if o.label != "" {
		if err := os.WriteFile(filepath.Join(o.out, "relay-"+o.label+".json"), js, 0o644); err != nil {
			return err
		}
	}
	md := markdown(r)
	if err := os.WriteFile(filepath.Join(o.out, "relay.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if len(r.Transfers) > 0 {
		svg := plot(r)
		if err := os.WriteFile(filepath.Join(o.out, "relay.svg"), []byte(svg), 0o644); err != nil {
			return err
		}
		if o.label != "" {
			if err := os.WriteFile(filepath.Join(o.out, "relay-"+o.label+".svg"), []byte(svg), 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Print(md)
	return nil
}
