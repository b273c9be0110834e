package lifecycle

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// sd_notify's datagrams reach the socket systemd names, path or abstract.
func TestSDNotify(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := sdNotify("READY=1"); err != nil {
		t.Fatalf("without systemd: %v", err)
	}
	for _, name := range []string{filepath.Join(t.TempDir(), "notify"), "@frontdoor-notify-test-" + filepath.Base(t.TempDir())} {
		addr := name
		if strings.HasPrefix(name, "@") {
			addr = "\x00" + name[1:]
		}
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("NOTIFY_SOCKET", name)
		if err := sdNotify("MAINPID=42"); err != nil {
			t.Fatal(err)
		}
		ln.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, err := ln.Read(buf)
		ln.Close()
		if err != nil || string(buf[:n]) != "MAINPID=42" {
			t.Fatalf("%s got %q, %v", name, buf[:n], err)
		}
	}
}

// The systemd unit matches what the process does: it notifies (as the main
// process, naming its successor), reloads on SIGHUP, and waits on stop
// longer than the default drain for every process of the unit.
func TestSystemdUnit(t *testing.T) {
	f, err := os.Open("../../deploy/systemd/frontdoor-gateway.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			unit[k] = v
		}
	}
	for k, want := range map[string]string{"Type": "notify", "NotifyAccess": "main", "ExecReload": "/bin/kill -HUP $MAINPID",
		"KillMode": "control-group"} {
		if unit[k] != want {
			t.Errorf("%s=%s, want %s", k, unit[k], want)
		}
	}
	stop, err := time.ParseDuration(strings.Replace(unit["TimeoutStopSec"], "min", "m", 1))
	if err != nil {
		t.Fatalf("TimeoutStopSec=%s: %v", unit["TimeoutStopSec"], err)
	}
	if drain := config.DefaultGateway().DrainTimeout; stop <= drain {
		t.Errorf("TimeoutStopSec=%s is not above the default drain_timeout %s: systemd would kill draining sessions", stop, drain)
	}
}
