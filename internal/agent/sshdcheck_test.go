package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// testdata/sshd holds real output: V-9.2 and T-9.2 from Debian 12's
// OpenSSH 9.2 (the sshd on these machines), V-10.0 and T-10.0-* from
// OpenSSH 10.0p2 (Debian bookworm-backports' openssh-server, run in
// place, not installed) with the configs in testdata/sshd/README. The host
// key path in the T files was replaced by /etc/ssh/ssh_host_ed25519_key.
func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sshd", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseSSHDVersion(t *testing.T) {
	for _, tc := range []struct {
		out          string
		major, minor int
	}{
		{readTestdata(t, "V-9.2.txt"), 9, 2},
		{readTestdata(t, "V-10.0.txt"), 10, 0},
		{"OpenSSH_9.8p1, OpenSSL 3.3.1 4 Jun 2024\n", 9, 8},
		{"OpenSSH_9.6p1 Ubuntu-3ubuntu13.5, OpenSSL 3.0.13 30 Jan 2024\n", 9, 6},
		// sshd before 9.2 has no -V: its usage message carries the version.
		{"unknown option -- V\nOpenSSH_8.9p1 Ubuntu-3ubuntu0.10, OpenSSL 3.0.2 15 Mar 2022\nusage: sshd [-46DdeGiqTtV] ...\n", 8, 9},
	} {
		major, minor, err := parseSSHDVersion(tc.out)
		if err != nil || major != tc.major || minor != tc.minor {
			t.Errorf("%q: %d.%d %v, want %d.%d", tc.out, major, minor, err, tc.major, tc.minor)
		}
	}
	for _, bad := range []string{"", "sshd: command not found", "OpenSSH_x.y"} {
		if _, _, err := parseSSHDVersion(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParsePenalties(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	for _, tc := range []struct {
		file    string
		enabled bool
		exempt  []netip.Prefix
	}{
		{"T-10.0-base.txt", true, nil},
		{"T-10.0-exempt.txt", true, pfx("10.0.0.10/32", "10.0.0.11/32", "2001:db8::/64")},
		{"T-10.0-off.txt", false, nil},
		{"T-9.2.txt", false, nil},
	} {
		p, err := parsePenalties(readTestdata(t, tc.file))
		if err != nil || p.enabled != tc.enabled || !slices.Equal(p.exempt, tc.exempt) {
			t.Errorf("%s: %+v %v, want enabled %v exempt %v", tc.file, p, err, tc.enabled, tc.exempt)
		}
	}
	if _, err := parsePenalties("persourcepenaltyexemptlist 10.0.0.1,not-an-address\n"); err == nil {
		t.Error("a bad exempt entry parsed")
	}
}

// fakeSSHD answers -V and -T with recorded output.
type fakeSSHD struct {
	v, t  string
	tErr  error
	calls []string
}

func (f *fakeSSHD) run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	switch args[0] {
	case "-V":
		return []byte(f.v), nil
	case "-T":
		return []byte(f.t), f.tErr
	}
	return nil, fmt.Errorf("unexpected %v", args)
}

func gateways(addrs ...string) func(context.Context) ([]netip.Addr, error) {
	return func(context.Context) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func TestSSHDCheck(t *testing.T) {
	v10, v92 := readTestdata(t, "V-10.0.txt"), readTestdata(t, "V-9.2.txt")
	base, exempt, off := readTestdata(t, "T-10.0-base.txt"), readTestdata(t, "T-10.0-exempt.txt"), readTestdata(t, "T-10.0-off.txt")
	for _, tc := range []struct {
		name     string
		sshd     fakeSSHD
		gws      []string
		want     []string // warnings
		mention  string   // in the log detail
		wantErr  bool
		wantRunT bool
	}{
		{"10.0, no exemption", fakeSSHD{v: v10, t: base}, []string{"10.0.0.10"}, []string{cluster.WarnPenaltyNotExempt}, "10.0.0.10", false, true},
		{"10.0, gateways exempt", fakeSSHD{v: v10, t: exempt}, []string{"10.0.0.10", "10.0.0.11"}, nil, "", false, true},
		{"10.0, one gateway missing", fakeSSHD{v: v10, t: exempt}, []string{"10.0.0.10", "10.0.0.12"}, []string{cluster.WarnPenaltyNotExempt}, "10.0.0.12", false, true},
		{"10.0, IPv6 gateway in an exempt /64", fakeSSHD{v: v10, t: exempt}, []string{"2001:db8::5"}, nil, "", false, true},
		{"10.0, IPv4-mapped gateway", fakeSSHD{v: v10, t: exempt}, []string{"::ffff:10.0.0.11"}, nil, "", false, true},
		{"10.0, penalties off", fakeSSHD{v: v10, t: off}, []string{"10.0.0.10"}, nil, "", false, true},
		{"9.2 has no penalties: -T not even asked", fakeSSHD{v: v92, t: base}, []string{"10.0.0.10"}, nil, "", false, false},
		{"no version", fakeSSHD{v: "sshd: not found"}, []string{"10.0.0.10"}, nil, "", true, false},
		{"-T fails", fakeSSHD{v: v10, t: "/etc/ssh/sshd_config line 3: Bad configuration option", tErr: errors.New("exit status 255")}, []string{"10.0.0.10"}, nil, "Bad configuration", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.sshd
			c := sshdChecker{sshd: "/usr/sbin/sshd", config: "/etc/ssh/sshd_config", gateways: gateways(tc.gws...), run: f.run}
			ws, detail, err := c.check(t.Context())
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, errCheck)) {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				detail = err.Error()
			}
			if !slices.Equal(ws, tc.want) || !strings.Contains(detail, tc.mention) {
				t.Fatalf("warnings %q detail %q, want %q mentioning %q", ws, detail, tc.want, tc.mention)
			}
			if ranT := slices.Contains(f.calls, "-T -f /etc/ssh/sshd_config"); ranT != tc.wantRunT {
				t.Fatalf("calls %q", f.calls)
			}
		})
	}
}

// TestSSHDCheckRealSSHD runs the check against the real sshd of this
// machine (Debian 12: OpenSSH 9.2, no PerSourcePenalties): the version
// is read, and its effective config, asked for directly, parses.
func TestSSHDCheckRealSSHD(t *testing.T) {
	sshd := DefaultConfig().SSHDPath
	if _, err := os.Stat(sshd); err != nil {
		t.Fatalf("the real sshd is a prerequisite (make deps): %v", err)
	}
	dir := t.TempDir()
	key := hostKeyFile(t, dir)
	cfg := filepath.Join(dir, "sshd_config")
	writeFile(t, cfg, "HostKey "+key+"\nListenAddress 127.0.0.1:1\nUsePAM no\n")
	c := sshdChecker{sshd: sshd, config: cfg, gateways: gateways("127.0.0.1"), run: runCommand}
	out, err := runCommand(t.Context(), sshd, "-V")
	major, minor, perr := parseSSHDVersion(string(out))
	if perr != nil {
		t.Fatalf("sshd -V: %q %v: %v", out, err, perr)
	}
	t.Logf("this machine's sshd: OpenSSH %d.%d", major, minor)
	ws, detail, err := c.check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tOut, err := runCommand(t.Context(), sshd, "-T", "-f", cfg)
	if err != nil {
		t.Fatalf("sshd -T: %v: %s", err, tOut)
	}
	p, err := parsePenalties(string(tOut))
	if err != nil {
		t.Fatal(err)
	}
	hasPenalties := major > 9 || (major == 9 && minor >= 8)
	if p.enabled != hasPenalties || (len(ws) > 0) != hasPenalties {
		t.Fatalf("OpenSSH %d.%d: penalties %+v, warnings %q (%s)", major, minor, p, ws, detail)
	}
	// And the real sshd refuses the exemption keyword it does not know,
	// which is why deploy/ installs it only on ≥ 9.8.
	writeFile(t, cfg, "HostKey "+key+"\nPerSourcePenaltyExemptList 10.0.0.10\n")
	if out, err := runCommand(t.Context(), sshd, "-t", "-f", cfg); (err == nil) == !hasPenalties {
		t.Fatalf("sshd -t with PerSourcePenaltyExemptList on %d.%d: %v %s", major, minor, err, out)
	}
}

// TestTickCarriesWarnings: what the sshd check finds goes out with the
// health at once, and is checked again only every sshd_check_interval.
func TestTickCarriesWarnings(t *testing.T) {
	cfg, metrics := tickConfig(t)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := &fakeSSHD{v: readTestdata(t, "V-10.0.txt"), t: readTestdata(t, "T-10.0-base.txt")}
	pub := &fakePub{}
	a := &agent{cfg: cfg, src: FileSource{Path: metrics}, pub: pub, log: testLogger(), now: func() time.Time { return now },
		sshd: &sshdChecker{sshd: "sshd", gateways: gateways("10.0.0.10"), run: f.run}}
	a.tick(t.Context())
	if len(pub.got) != 1 || !slices.Equal(pub.got[0].Warnings, []string{cluster.WarnPenaltyNotExempt}) {
		t.Fatalf("published %+v", pub.got)
	}
	// The operator installs the exemption; not checked again yet.
	f.t = readTestdata(t, "T-10.0-exempt.txt")
	now = now.Add(time.Second)
	a.tick(t.Context())
	if len(pub.got) != 1 {
		t.Fatalf("published again before anything changed: %+v", pub.got)
	}
	now = now.Add(cfg.SSHDCheckInterval)
	a.tick(t.Context())
	if len(pub.got) != 2 || len(pub.got[1].Warnings) != 0 {
		t.Fatalf("published %+v", pub.got)
	}
}

// TestDeployExemptionScript runs deploy/sshd-penalty-exemption.sh, which
// the HyperPod lifecycle snippet calls, against the real sshd of this
// machine (9.2): it writes the exemption only where sshd has penalties,
// removes a stale one where it does not, and never leaves a config that
// `sshd -t` refuses. A wrapper stands in for a newer sshd's `-V`.
func TestDeployExemptionScript(t *testing.T) {
	sshd := DefaultConfig().SSHDPath
	if _, err := os.Stat(sshd); err != nil {
		t.Fatalf("the real sshd is a prerequisite (make deps): %v", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "deploy", "sshd-penalty-exemption.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dropins := filepath.Join(dir, "sshd_config.d")
	dropin := filepath.Join(dropins, "frontdoor-penalties.conf")
	cfg := filepath.Join(dir, "sshd_config")
	writeFile(t, cfg, "Include "+dropins+"/*.conf\nHostKey "+hostKeyFile(t, dir)+"\nUsePAM no\n")
	// fake is an sshd whose -V says version and whose -t is real (real)
	// or always passes.
	fake := func(version string, realT bool) string {
		p := filepath.Join(dir, "sshd-"+version)
		check := "exit 0"
		if realT {
			check = "exec " + sshd + ` "$@"`
		}
		writeFile(t, p, "#!/bin/sh\nif [ \"$1\" = -V ]; then echo \"OpenSSH_"+version+", OpenSSL 3.0\" >&2; exit 0; fi\n"+check+"\n")
		os.Chmod(p, 0o755)
		return p
	}
	run := func(sshdBin, addrs string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "bash", script, addrs, dropin)
		cmd.Env = append(os.Environ(), "SSHD="+sshdBin, "SSHD_CONFIG="+cfg)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	read := func() string {
		b, err := os.ReadFile(dropin)
		if err != nil {
			return ""
		}
		return string(b)
	}

	// Newer sshd: the exemption is written, and reads back as sshd -T
	// would show it.
	if out, err := run(fake("10.0p2", false), "10.0.0.10, 10.0.0.11\n2001:db8::/64"); err != nil {
		t.Fatalf("10.0: %v: %s", err, out)
	}
	p, err := parsePenalties("persourcepenalties crash:90\n" + read())
	if err != nil || len(p.exempt) != 3 || len(p.notExempt([]netip.Addr{netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("2001:db8::1")})) != 0 {
		t.Fatalf("drop-in %q: %+v %v", read(), p, err)
	}
	// The real 9.2: the stale drop-in goes, and sshd -t passes.
	if out, err := run(sshd, "10.0.0.10"); err != nil || read() != "" {
		t.Fatalf("9.2: %v: %s; drop-in %q", err, out, read())
	}
	if out, err := runCommand(t.Context(), sshd, "-t", "-f", cfg); err != nil {
		t.Fatalf("sshd -t after: %v: %s", err, out)
	}
	// An sshd that claims 9.8 but refuses the keyword: the script fails
	// and puts the previous drop-in back.
	writeFile(t, dropin, "# previous\n")
	if out, err := run(fake("9.8p1", true), "10.0.0.10"); err == nil || !strings.Contains(out, "Bad configuration option") || read() != "# previous\n" {
		t.Fatalf("9.8 claim with a 9.2 sshd: %v: %s; drop-in %q", err, out, read())
	}
	// Anything but addresses is refused before sshd is asked.
	if out, err := run(sshd, "10.0.0.1; rm -rf /"); err == nil || read() != "# previous\n" {
		t.Fatalf("bad addresses: %v: %s", err, out)
	}
}
