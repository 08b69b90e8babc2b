package signal

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// waitSignaled waits for cmd to end by sig.
func waitSignaled(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("process %d did not end", cmd.Process.Pid)
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != sig {
		t.Fatalf("process ended with %v, want killed by %v", cmd.ProcessState, sig)
	}
}

func TestSignalOwnProcess(t *testing.T) {
	cmd := startSleep(t)
	if err := (Sender{}).Signal(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitSignaled(t, cmd, syscall.SIGTERM)
}

func TestRefusals(t *testing.T) {
	cmd := startSleep(t)
	pid := cmd.Process.Pid
	other := os.Geteuid() + 4242 // a uid that owns nothing here
	tests := []struct {
		name string
		s    Sender
		pid  int
		want string
	}{
		{"readonly", Sender{ReadOnly: true}, pid, "--readonly"},
		{"another user's process", Sender{UID: &other}, pid, "pipetop signals only your own processes unless it runs as root"},
		{"init", Sender{}, 1, "refusing to signal pid 1"},
		{"gone", Sender{}, 1 << 30, "is gone"},
	}
	for _, tt := range tests {
		err := tt.s.Signal(tt.pid, syscall.SIGKILL)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := (Sender{ReadOnly: true}).Signal(pid, syscall.SIGKILL); !errors.Is(err, ErrReadOnly) {
		t.Errorf("readonly error %v is not ErrReadOnly", err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("a refused signal reached the process: %v", err)
	}
	root := 0
	if err := (Sender{UID: &root}).Signal(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("root may signal any process: %v", err)
	}
	waitSignaled(t, cmd, syscall.SIGKILL)
}
