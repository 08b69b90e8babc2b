package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
)

// newProcsEnv builds pipetop and the synthetic publisher for a tmux test
// on tmux server pipetop-NAME-PID; it skips under -short or without tmux.
func newProcsEnv(t *testing.T, name string) *tmuxEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	bin := testkit.BinDir(t)
	return &tmuxEnv{t: t, server: fmt.Sprintf("pipetop-%s-%d", name, os.Getpid()), sockets: t.TempDir(), bin: bin}
}

// TestTmuxProcessTable drives the process table of the real pipetop in a
// real tmux session: the synthetic publisher (a real child of this test)
// shows as the trainer's row; F6 and > sort, / filters, F9 y terminates
// it, and under --readonly F9 is refused and the process lives on.
func TestTmuxProcessTable(t *testing.T) {
	t.Parallel()
	e := newProcsEnv(t, "procs")
	defer e.kill()

	pid := e.startPublisher()
	row := fmt.Sprintf("*-    %7d", pid)
	e.startView()
	e.waitScreen("the publisher's row in the process table", func(s string) bool {
		return strings.Contains(s, "─ processes ·") && strings.Contains(s, row) && strings.Contains(s, "synthetic")
	})
	e.tmux("send-keys", "-t", "e2e", "F6")
	e.waitScreen("sorted by SM %", func(s string) bool { return strings.Contains(s, "sort SM %") })
	e.tmux("send-keys", "-t", "e2e", ">")
	e.waitScreen("sorted by CPU %", func(s string) bool { return strings.Contains(s, "sort CPU %") && strings.Contains(s, "CPU %▼") })

	e.tmux("send-keys", "-t", "e2e", "/")
	e.tmux("send-keys", "-t", "e2e", "-l", "zzz")
	e.waitScreen("a filter matching nothing", func(s string) bool {
		return strings.Contains(s, `no process matches "zzz"`) && !strings.Contains(s, row)
	})
	e.tmux("send-keys", "-t", "e2e", "Escape")
	e.waitScreen("esc clearing the filter", func(s string) bool { return strings.Contains(s, row) && !strings.Contains(s, "filter") })
	e.tmux("send-keys", "-t", "e2e", "/")
	e.tmux("send-keys", "-t", "e2e", "-l", "SYNTH")
	e.tmux("send-keys", "-t", "e2e", "Enter")
	e.waitScreen("the filter keeping the publisher", func(s string) bool {
		return strings.Contains(s, `filter "SYNTH"`) && strings.Contains(s, row)
	})

	e.tmux("send-keys", "-t", "e2e", "F9")
	e.waitScreen("the SIGTERM confirmation", func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("send SIGTERM to %d (synthetic)? y to confirm", pid))
	})
	exited := make(chan *os.ProcessState, 1)
	pub := e.pub
	e.pub = nil
	go func() { pub.Wait(); exited <- pub.ProcessState }()
	e.tmux("send-keys", "-t", "e2e", "y")
	select {
	case st := <-exited:
		if ws := st.Sys().(syscall.WaitStatus); !(ws.Signaled() && ws.Signal() == syscall.SIGTERM) && !ws.Exited() {
			t.Errorf("publisher ended with %v, want SIGTERM", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("F9 y did not end the publisher")
	}
	e.waitScreen("the sent message and the link down", func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("sent SIGTERM to %d", pid)) && strings.Contains(s, "disconnected")
	})
	pid = e.startPublisher()
	row = fmt.Sprintf("*-    %7d", pid)
	e.startView("--readonly")
	e.waitScreen("the publisher's row under --readonly", func(s string) bool { return strings.Contains(s, row) })
	e.tmux("send-keys", "-t", "e2e", "F9")
	e.waitScreen("the --readonly refusal", func(s string) bool {
		return strings.Contains(s, "signals are disabled (--readonly)")
	})
	e.tmux("send-keys", "-t", "e2e", "y")
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the publisher died under --readonly: %v", err)
	}
}

// startView runs pipetop at 120x40 in the e2e tmux session, or in place
// of the pipetop already there (respawn-pane: killing the only session
// would stop the tmux server under the next command).
func (e *tmuxEnv) startView(flags ...string) {
	e.t.Helper()
	args := []string{"new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40"}
	if exec.Command("tmux", "-L", e.server, "has-session", "-t", "e2e").Run() == nil {
		args = []string{"respawn-pane", "-k", "-t", "e2e"}
	}
	args = append(args, "env", "PIPETOP_SOCKET_DIR="+e.sockets, "TERM=xterm-256color", filepath.Join(e.bin, "pipetop"), "--interval", "250ms", "--no-gpu")
	e.tmux(append(args, flags...)...)
}

// TestTmuxProcessThreads drives H in the real pipetop: the publisher's
// threads appear under its row with their roles and run-queue waits, the
// status line gives the usable cores, and H again hides them.
func TestTmuxProcessThreads(t *testing.T) {
	t.Parallel()
	e := newProcsEnv(t, "threads")
	defer e.kill()
	pid := e.startPublisher()
	row := fmt.Sprintf("*-    %7d", pid)
	e.startView()
	e.waitScreen("the publisher's row", func(s string) bool { return strings.Contains(s, row) })
	e.tmux("send-keys", "-t", "e2e", "H")
	// The synthetic publisher names no training thread: its first thread
	// is main, the Go runtime's threads carry its name (intra-op).
	e.waitScreen("the publisher's threads and the CPU line", func(s string) bool {
		return strings.Contains(s, "main synthetic (wait") && strings.Contains(s, "intra-op synthetic (wait") &&
			strings.Contains(s, "usable cores") && strings.Contains(s, "threads ·")
	})
	e.tmux("send-keys", "-t", "e2e", "H")
	e.waitScreen("the threads hidden again", func(s string) bool {
		return strings.Contains(s, row) && !strings.Contains(s, "main synthetic (wait")
	})
}
