package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// maintenanceSource drains with a deadline, recording what it got.
type maintenanceSource struct {
	fakeSource
	mu       sync.Mutex // mu protects the following
	deadline time.Time
	message  string
}

func (m *maintenanceSource) DrainUntil(node string, deadline time.Time, message, by string) error {
	if strings.ContainsRune(message, 0x1b) {
		return errors.New("drain message: character U+001B at byte 0: no control, bidi or line-separator characters")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deadline, m.message = deadline, message
	return nil
}

func (m *maintenanceSource) got() (time.Time, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadline, m.message
}

func startMaintenanceAdmin(t *testing.T) (string, *maintenanceSource) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "admin.sock")
	src := &maintenanceSource{}
	s, err := admin.Listen(config.Gateway{AdminSocket: sock}, admin.Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock, src
}

// `frontdoor drain NODE --deadline D --message M`, flags after the node
// as the docs write it; --comment is --message; a deadline that is
// neither a duration nor a time is a usage error; the gateway's refusal
// is one line.
func TestDrainCLI(t *testing.T) {
	sock, src := startMaintenanceAdmin(t)
	ctx := context.Background()
	t.Setenv("SUDO_USER", "")
	var out bytes.Buffer
	start := time.Now()
	if err := runMaintenanceDrain(ctx, []string{"--admin", sock, "login1", "--deadline", "30m", "--message", "kernel update"}, &out); err != nil {
		t.Fatal(err)
	}
	deadline, message := src.got()
	if d := deadline.Sub(start); d < 30*time.Minute || d > 31*time.Minute || message != "kernel update" {
		t.Fatalf("deadline in %s, message %q", d, message)
	}
	if !strings.Contains(out.String(), "login1: draining (by unix:") || !strings.Contains(out.String(), "closed then") {
		t.Fatalf("output %q", out.String())
	}
	if err := runMaintenanceDrain(ctx, []string{"--admin", sock, "--comment", "firmware", "--deadline", "2099-01-01T00:00:00Z", "login1"}, &out); err != nil {
		t.Fatal(err)
	}
	if deadline, message := src.got(); message != "firmware" || deadline.Year() != 2099 {
		t.Fatalf("--comment with an absolute deadline: %v %q", deadline, message)
	}
	err := runMaintenanceDrain(ctx, []string{"--admin", sock, "--deadline", "tomorrow", "login1"}, &out)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `--deadline "tomorrow"`) {
		t.Fatalf("bad deadline: %v", err)
	}
	err = runMaintenanceDrain(ctx, []string{"--admin", sock, "--deadline", "5m", "--message", "\x1b[2Jhi", "login1"}, &out)
	if err == nil || !strings.Contains(err.Error(), "U+001B") {
		t.Fatalf("hostile message: %v", err)
	}
}

// `frontdoor nodes` lists maintenance drains under the nodes.
func TestMaintenanceTable(t *testing.T) {
	now := time.Date(2026, 6, 1, 14, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	err := nodesTable(&out, []admin.NodeInfo{
		{Name: "login1", Pool: "general", Alive: true, SSHDUp: true, Draining: true, Sessions: 3, HealthAt: now,
			DrainDeadline: now.Add(30 * time.Minute), DrainMessage: "kernel update", DrainBy: "unix:root"},
		{Name: "login2", Pool: "general", Alive: true, SSHDUp: true, HealthAt: now},
		{Name: "ip-10-1-0-14", NotTaking: "system updating", Here: 2, DrainDeadline: now.Add(-time.Minute), DrainBy: "hyperpod",
			DrainMessage: "HyperPod is updating this node's software"},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"MAINTENANCE   DEADLINE",
		"login1        2026-06-01T14:30:00Z  30m0s   3              unix:root  kernel update",
		"ip-10-1-0-14  2026-06-01T13:59:00Z  passed  2              hyperpod   HyperPod is updating this node's software",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("nodes table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "login2  2026") {
		t.Fatalf("login2 is not drained:\n%s", got)
	}
}
