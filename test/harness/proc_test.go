package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestDescendants(t *testing.T) {
	// A child, and a grandchild under a second child.
	cmd := exec.Command("sh", "-c", `sleep 60 & sh -c "sleep 60; :" & wait`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range Descendants(cmd.Process.Pid) {
			if pr, err := os.FindProcess(p); err == nil {
				pr.Kill()
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	err := WaitFor(context.Background(), 10*time.Second, func() error {
		if d := Descendants(cmd.Process.Pid); len(d) != 3 {
			return fmt.Errorf("descendants %v, want 3 (sleep, sh, its sleep)", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := Descendants(1 << 30); len(d) != 0 {
		t.Fatalf("a process that does not exist has descendants %v", d)
	}
}

func TestStatus(t *testing.T) {
	if rss, err := StatusKiB(os.Getpid(), "VmRSS:"); err != nil || rss <= 0 {
		t.Fatalf("VmRSS of self = %d, %v", rss, err)
	}
	if _, err := StatusKiB(os.Getpid(), "NoSuchKey:"); err == nil {
		t.Fatal("a key /proc does not have was found")
	}
	if MemAvailableKiB() <= 0 || MemTotalKiB() < MemAvailableKiB() {
		t.Fatalf("meminfo: available %d, total %d", MemAvailableKiB(), MemTotalKiB())
	}
}
