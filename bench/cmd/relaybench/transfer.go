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
	return b.transferPID(ctx, args, up, sizeMiB, nil)
}

// transferPID is transfer, sending the client's pid to pid (if not nil)
// once it has started.
func (b *bench) transferPID(ctx context.Context, args []string, up bool, sizeMiB int, pid chan<- int) (float64, float64, error) {
	size := int64(sizeMiB) << 20
	var cmd *exec.Cmd
	if up {
		cmd = b.command(ctx, cpuClient, "ssh", append(args, "cat > /dev/null")...)
		src := b.src
		if sizeMiB != b.o.sizeMiB {
			// Another size (profiling): an endless source, cut by the
			// remote end.
			cmd = b.command(ctx, cpuClient, "ssh", append(args, fmt.Sprintf("head -c %d > /dev/null", size))...)
			src = "/dev/zero"
		}
		f, err := os.Open(src)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		cmd.Stdin = f
	} else {
		cmd = b.command(ctx, cpuClient, "ssh", append(args, fmt.Sprintf("head -c %d /dev/zero", size))...)
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
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	if pid != nil {
		pid <- cmd.Process.Pid
	}
	if err := cmd.Wait(); err != nil {
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
					load := loadNow()
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
					row.Load1 = append(row.Load1, load.L1)
					row.SSHDCPU += (after.sshd - before.sshd) / gib
					row.ClientCPU += ccpu / gib
					pcpu := (after.proxy[p] - before.proxy[p]) / gib
					if p != pathDirect {
						row.ProxyCPU += pcpu
						row.ProxyCPURuns = append(row.ProxyCPURuns, pcpu)
					}
					if sys, ok := after.sys[p]; ok {
						row.ProxyReads += float64(sys[0]-before.sys[p][0]) / float64(b.o.sizeMiB)
						row.ProxyWrites += float64(sys[1]-before.sys[p][1]) / float64(b.o.sizeMiB)
					}
					log.Printf("  %s %s %-18s %4.0f MiB/s, cpu: proxy %.2f sshd %.2f client %.2f s (load %.2f)", c.name, dirName(up), p, v,
						pcpu*gib, after.sshd-before.sshd, ccpu, load.L1)
				}
			}
			n := float64(b.o.reps)
			for _, row := range rows {
				row.Median = median(row.MiBs)
			}
			direct, socat, peer := rows[pathDirect], rows[pathSocat], rows[pathPeer]
			for _, p := range paths {
				row := rows[p]
				row.Ratio = row.Median / direct.Median
				row.RatioSocat = row.Median / socat.Median
				row.ProxyCPU /= n
				row.ProxyCPUMedian = median(row.ProxyCPURuns)
				row.SSHDCPU /= n
				row.ClientCPU /= n
				row.ProxyReads /= n
				row.ProxyWrites /= n
				if peer != nil {
					row.RatioPeer = row.Median / peer.Median
				}
			}
			for _, p := range paths {
				row := rows[p]
				if peer != nil && p != pathDirect && p != pathSocat {
					row.CPURatioPeer = row.ProxyCPU / peer.ProxyCPU
				}
				r.Transfers = append(r.Transfers, *row)
				log.Printf("%s %s %-18s %v MiB/s ×%.2f direct ×%.2f socat, proxy %.2f sshd %.2f s/GiB, syscalls/MiB %.0f r %.0f w", c.name, dirName(up), p,
					fmtList(row.MiBs), row.Ratio, row.RatioSocat, row.ProxyCPU, row.SSHDCPU, row.ProxyReads, row.ProxyWrites)
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
