package host

import (
	"os"
	"os/exec"
	"testing"
)

// TestDescends: this process descends from itself and its parent, a child
// from this process, and this process not from its child.
func TestDescends(t *testing.T) {
	self := os.Getpid()
	if !Descends(self, self) || os.Getppid() > 1 && !Descends(self, os.Getppid()) {
		t.Errorf("Descends(self, self or parent) = false")
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if child := cmd.Process.Pid; !Descends(child, self) || Descends(self, child) {
		t.Errorf("Descends(child, self) = %v, Descends(self, child) = %v; want true, false", Descends(child, self), Descends(self, child))
	}
	if Descends(1, self) || Descends(0, self) {
		t.Error("init or pid 0 descends from this process")
	}
}
