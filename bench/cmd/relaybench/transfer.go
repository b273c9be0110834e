package main

// Bulk transfers: throughput up and down per cipher and path, with the CPU
// seconds per GiB and syscalls per MiB each path costs.

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// transfer runs one bulk transfer of size MiB (up: the client's stdin into
// `cat > /dev/null`; down: `head -c` of /dev/zero to the client's
// /dev/null) and returns MiB/s and the client's CPU seconds.
func (b *bench) transfer(ctx context.Context, args []string, up bool, sizeMiB int) (float64, float64, error) {
	size := int64(sizeMiB) << 20
	var cmd *exec.Cmd
	if up {
		cmd = exec.CommandContext(ctx, "ssh", append(args, "cat > /dev/null")...)
		src := b.src
		if sizeMiB != b.o.sizeMiB {
			// Another size (profiling): an endless source, cut by the
			// remote end.
			cmd = exec.CommandContext(ctx, "ssh", append(args, fmt.Sprintf("head -c %d > /dev/null", size))...)
			src = "/dev/zero"
		}
		f, err := os.Open(src)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		cmd.Stdin = f
	} else {
		cmd = exec.CommandContext(ctx, "ssh", append(args, fmt.Sprintf("head -c %d /dev/zero", size))...)
	}
	// Output to /dev/null: capturing it would measure this process.
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer devnull.Close()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = devnull, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, stderr.String())
	}
	el := time.Since(start).Seconds()
	cpu := cmd.ProcessState.UserTime().Seconds() + cmd.ProcessState.SystemTime().Seconds()
	return float64(sizeMiB) / el, cpu, nil
}

// transfers: every cipher, both directions, all paths; reps rounds, the
// paths' order rotating each round so drifting load hits all alike.
func (b *bench) transfers(ctx context.Context, r *result) error {
	gib := float64(b.o.sizeMiB) / 1024
	// One untimed transfer per path first: the gateway's first transfer
	// pays for growing its heap and buffers, which is not a steady state.
	for _, p := range paths {
		if _, _, err := b.transfer(ctx, b.sshArgs(p, ciphers[0].flag), false, b.o.sizeMiB); err != nil {
			return fmt.Errorf("warm-up via %s: %w", p, err)
		}
	}
	for _, c := range ciphers {
		for _, up := range []bool{true, false} {
			rows := map[string]*transferRow{}
			for _, p := range paths {
				rows[p] = &transferRow{Cipher: c.name, Direction: dirName(up), Path: p}
			}
			for i := 0; i < b.o.reps; i++ {
				for j := range paths {
					p := paths[(i+j)%len(paths)]
					row := rows[p]
					if err := b.settle(ctx); err != nil {
						return err
					}
					before, err := b.cpuNow()
					if err != nil {
						return err
					}
					v, ccpu, err := b.transfer(ctx, b.sshArgs(p, c.flag), up, b.o.sizeMiB)
					if err != nil {
						return fmt.Errorf("%s %s %s: %w", p, c.name, dirName(up), err)
					}
					if err := b.settle(ctx); err != nil {
						return err
					}
					after, err := b.cpuNow()
					if err != nil {
						return err
					}
					row.MiBs = append(row.MiBs, v)
					log.Printf("  %s %s %s: %.0f MiB/s, cpu gw %.2f baseline %.2f sshd %.2f socat %.2f client %.2f s", c.name, dirName(up), p, v,
						after.gw-before.gw, after.base-before.base, after.sshd-before.sshd, after.socat-before.socat, ccpu)
					row.SSHDCPU += (after.sshd - before.sshd) / gib
					row.ClientCPU += ccpu / gib
					switch p {
					case pathFrontdoor:
						row.GatewayCPU += (after.gw - before.gw) / gib
						row.GatewayCPURuns = append(row.GatewayCPURuns, (after.gw-before.gw)/gib)
						row.GatewayReads += float64(after.gwSys[0]-before.gwSys[0]) / float64(b.o.sizeMiB)
						row.GatewayWrites += float64(after.gwSys[1]-before.gwSys[1]) / float64(b.o.sizeMiB)
					case pathSocat:
						row.ForwarderCPU += (after.socat - before.socat) / gib
					case pathBaseline:
						row.GatewayCPU += (after.base - before.base) / gib
						row.GatewayCPURuns = append(row.GatewayCPURuns, (after.base-before.base)/gib)
						row.GatewayReads += float64(after.baseSys[0]-before.baseSys[0]) / float64(b.o.sizeMiB)
						row.GatewayWrites += float64(after.baseSys[1]-before.baseSys[1]) / float64(b.o.sizeMiB)
					}
				}
			}
			n := float64(b.o.reps)
			for _, p := range paths {
				row := rows[p]
				row.Median = median(row.MiBs)
				row.Ratio = row.Median / rows[pathDirect].Median
				row.GatewayCPU /= n
				row.GatewayCPUMedian = median(row.GatewayCPURuns)
				row.SSHDCPU /= n
				row.ClientCPU /= n
				row.ForwarderCPU /= n
				row.GatewayReads /= n
				row.GatewayWrites /= n
				r.Transfers = append(r.Transfers, *row)
				log.Printf("%s %s %-9s %v MiB/s ×%.2f  gw %.2f sshd %.2f s/GiB, gw syscalls/MiB %.0f r %.0f w", c.name, dirName(up), p, fmtList(row.MiBs), row.Ratio, row.GatewayCPU, row.SSHDCPU, row.GatewayReads, row.GatewayWrites)
			}
		}
	}
	return nil
}

func dirName(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

func fmtList(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(s, " ")
}
