package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Sample is one measurement of the node. Fractions are 0..1.
type Sample struct {
	Load1        float64 `yaml:"load1" json:"load1"`
	Load5        float64 `yaml:"load5" json:"load5"`
	Load15       float64 `yaml:"load15" json:"load15"`
	CPUs         int     `yaml:"cpus" json:"cpus"`
	CPUUtil      float64 `yaml:"cpu_util" json:"cpu_util"`
	MemAvailFrac float64 `yaml:"mem_avail_frac" json:"mem_avail_frac"`
	HasPSI       bool    `yaml:"has_psi" json:"has_psi"`
	CPUPressure  float64 `yaml:"cpu_pressure" json:"cpu_pressure"`
	MemPressure  float64 `yaml:"mem_pressure" json:"mem_pressure"`
	Sessions     int     `yaml:"sessions" json:"sessions"`
	Users        int     `yaml:"users" json:"users"`
}

// Source measures the node. The agent holds only this method of a source,
// so tests and the local stack swap in FileSource.
type Source interface {
	Sample(ctx context.Context) (Sample, error)
}

// FileSource reads a Sample from a YAML or JSON file on every call, e.g.
//
//	{"load1": 3.5, "cpus": 8, "mem_avail_frac": 0.4, "sessions": 12, "users": 5}
//
// Unknown keys are errors, so a typo does not silently read as zero.
type FileSource struct{ Path string }

func (f FileSource) Sample(ctx context.Context) (Sample, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return Sample{}, fmt.Errorf("metrics file: %w", err)
	}
	var s Sample
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Sample{}, fmt.Errorf("metrics file %s: %w", f.Path, err)
	}
	s.CPUs = max(s.CPUs, 1)
	return s, nil
}

// ProcSource measures the real node from /proc.
//
// Sessions are ESTABLISHED TCP connections to the local sshd's port (and
// address, unless sshd listens on a wildcard): it counts scp, sftp and VS
// Code connections, which utmp misses, and it stays correct when several
// sshds share a machine. Users are the distinct users of sshd monitor
// processes ("sshd: USER [priv]"; "sshd-session:" on OpenSSH ≥ 9.8).
type ProcSource struct {
	Root     string // /proc
	SSHDAddr string // host:port of the local sshd

	mu        sync.Mutex // mu protects the following
	prevBusy  uint64
	prevTotal uint64
}

func (p *ProcSource) path(parts ...string) string {
	return filepath.Join(append([]string{p.Root}, parts...)...)
}

func (p *ProcSource) Sample(ctx context.Context) (Sample, error) {
	var s Sample
	var errs []error
	if err := p.loadavg(&s); err != nil {
		errs = append(errs, err)
	}
	if err := p.stat(&s); err != nil {
		errs = append(errs, err)
	}
	if err := p.meminfo(&s); err != nil {
		errs = append(errs, err)
	}
	// PSI is optional: kernels without CONFIG_PSI have no /proc/pressure.
	if cpu, err := psiSomeAvg10(p.path("pressure", "cpu")); err == nil {
		s.HasPSI = true
		s.CPUPressure = cpu
		if mem, err := psiSomeAvg10(p.path("pressure", "memory")); err == nil {
			s.MemPressure = mem
		}
	}
	n, err := p.sshConns()
	if err != nil {
		errs = append(errs, err)
	}
	s.Sessions = n
	s.Users = p.sshUsers(ctx)
	s.CPUs = max(s.CPUs, 1)
	return s, errors.Join(errs...)
}

func (p *ProcSource) loadavg(s *Sample) error {
	b, err := os.ReadFile(p.path("loadavg"))
	if err != nil {
		return fmt.Errorf("loadavg: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return fmt.Errorf("loadavg: short line %q", b)
	}
	for i, dst := range []*float64{&s.Load1, &s.Load5, &s.Load15} {
		if *dst, err = strconv.ParseFloat(f[i], 64); err != nil {
			return fmt.Errorf("loadavg: %w", err)
		}
	}
	return nil
}

// stat reads the CPU count and utilisation since the previous call.
func (p *ProcSource) stat(s *Sample) error {
	b, err := os.ReadFile(p.path("stat"))
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	var busy, total uint64
	found := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			s.CPUs++
			continue
		}
		found = true
		// user nice system idle iowait irq softirq steal ...
		for i, v := range f[1:] {
			if i >= 8 {
				break // guest time is already in user
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("stat: %w", err)
			}
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
	}
	if !found {
		return errors.New("stat: no cpu line")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if dt := total - p.prevTotal; p.prevTotal != 0 && total > p.prevTotal {
		s.CPUUtil = float64(busy-p.prevBusy) / float64(dt)
	}
	p.prevBusy, p.prevTotal = busy, total
	return nil
}

func (p *ProcSource) meminfo(s *Sample) error {
	b, err := os.ReadFile(p.path("meminfo"))
	if err != nil {
		return fmt.Errorf("meminfo: %w", err)
	}
	var total, avail float64
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "MemTotal:":
			total = v
		case "MemAvailable:":
			avail = v
		}
	}
	if total <= 0 {
		return errors.New("meminfo: no MemTotal")
	}
	s.MemAvailFrac = avail / total
	return nil
}

// psiSomeAvg10 returns "some avg10" of a PSI file as a fraction.
func psiSomeAvg10(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, kv := range strings.Fields(line)[1:] {
			if v, ok := strings.CutPrefix(kv, "avg10="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %w", path, err)
				}
				return f / 100, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no some avg10", path)
}

// sshConns counts ESTABLISHED TCP connections whose local end is sshd.
func (p *ProcSource) sshConns() (int, error) {
	host, port, err := net.SplitHostPort(p.SSHDAddr)
	if err != nil {
		return 0, fmt.Errorf("sshd address: %w", err)
	}
	portN, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("sshd port: %w", err)
	}
	ip := net.ParseIP(host) // nil for a host name: match any address
	if ip != nil && ip.IsUnspecified() {
		ip = nil
	}
	n := 0
	read := 0
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(p.path("net", f))
		if err != nil {
			continue
		}
		read++
		n += countEstablished(b, ip, uint16(portN))
	}
	if read == 0 {
		return 0, errors.New("no /proc/net/tcp")
	}
	return n, nil
}

// countEstablished parses /proc/net/tcp{,6} content.
func countEstablished(b []byte, ip net.IP, port uint16) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "01" { // 01 = TCP_ESTABLISHED
			continue
		}
		laddr, lport, ok := parseProcAddr(f[1])
		if !ok || lport != port {
			continue
		}
		if ip != nil && !laddr.Equal(ip) {
			continue
		}
		n++
	}
	return n
}

// parseProcAddr decodes "0100007F:0016": the address is in host byte
// order per 32-bit word (little-endian here), the port big-endian hex.
func parseProcAddr(s string) (net.IP, uint16, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	return net.IP(raw), uint16(port), true
}

// sshUsers counts distinct users of sshd monitor processes.
func (p *ProcSource) sshUsers(ctx context.Context) int {
	dirs, err := os.ReadDir(p.Root)
	if err != nil {
		return 0
	}
	users := map[string]bool{}
	for _, d := range dirs {
		if ctx.Err() != nil {
			break
		}
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(p.path(d.Name(), "cmdline"))
		if err != nil {
			continue // the process exited
		}
		if u, ok := sshdSessionUser(string(bytes.TrimRight(b, "\x00"))); ok {
			users[u] = true
		}
	}
	return len(users)
}

// sshdSessionUser recognises "sshd: alice [priv]" (and "sshd-session:").
func sshdSessionUser(cmdline string) (string, bool) {
	rest, ok := strings.CutPrefix(cmdline, "sshd: ")
	if !ok {
		if rest, ok = strings.CutPrefix(cmdline, "sshd-session: "); !ok {
			return "", false
		}
	}
	user, ok := strings.CutSuffix(rest, " [priv]")
	if !ok || user == "" || user == "unknown" || strings.ContainsAny(user, " @") {
		return "", false
	}
	return user, true
}
