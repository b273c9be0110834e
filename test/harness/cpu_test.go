package harness

import (
	"os"
	"testing"
)

func TestProcessCPU(t *testing.T) {
	// Burn a little CPU so the figure cannot be zero for a wrong field.
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	_ = x
	cpu, err := ProcessCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("ProcessCPU(self) = %v, %v", cpu, err)
	}
	if _, err := ChildrenCPU(os.Getpid()); err != nil {
		t.Fatalf("ChildrenCPU(self): %v", err)
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Fatal("ProcessCPU of a process that does not exist succeeded")
	}
}
