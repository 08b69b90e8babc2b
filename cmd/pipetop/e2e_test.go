package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/tui/draw"
)

// TestTmuxEndToEnd runs the real pipetop binary in a real tmux session
// against the synthetic publisher (examples/synthetic), reads the screen
// with capture-pane, resizes the window, kills the publisher and starts it
// again under the same name.
func TestTmuxEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	bin := testkit.BinDir(t)
	sockets := t.TempDir()
	e := &tmuxEnv{t: t, server: fmt.Sprintf("pipetop-e2e-%d", os.Getpid()), sockets: sockets, bin: bin}
	defer e.kill()

	e.startPublisher()
	e.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40",
		"env", "PIPETOP_SOCKET_DIR="+sockets, "TERM=xterm-256color", filepath.Join(bin, "pipetop"), "--interval", "250ms", "--no-gpu")

	screen := e.waitScreen("the flame bar, verdict and CPU rows", func(s string) bool {
		return strings.Contains(s, "data_wait") && strings.Contains(s, "input-bound") && strings.Contains(s, "c0 ")
	})
	for _, want := range []string{"e2e", "● live", "forward", "backward", "■ data_wait", "CPU ", "c1 ", "next:"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}

	e.tmux("resize-window", "-t", "e2e", "-x", "80", "-y", "24")
	e.waitScreen("an 80x24 layout", func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return len(lines) == 24 && strings.Contains(s, "data_wait") && strings.Contains(s, "input-bound") && widest(lines) <= 80
	})

	e.stopPublisher()
	e.waitScreen(`"disconnected" with the last state kept`, func(s string) bool {
		return strings.Contains(s, "disconnected") && strings.Contains(s, "data_wait") && strings.Contains(s, "(last known)")
	})

	pid := e.startPublisher()
	e.waitScreen("reattached to the restarted publisher", func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("e2e pid %d ● live", pid))
	})

	e.tmux("send-keys", "-t", "e2e", "q")
	deadline := time.Now().Add(5 * time.Second)
	for exec.Command("tmux", "-L", e.server, "has-session", "-t", "e2e").Run() == nil {
		if time.Now().After(deadline) {
			t.Fatal("q did not quit pipetop")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type tmuxEnv struct {
	t       *testing.T
	server  string
	sockets string
	bin     string
	pub     *exec.Cmd
}

func (e *tmuxEnv) tmux(args ...string) string {
	e.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", e.server}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (e *tmuxEnv) startPublisher() int {
	e.t.Helper()
	e.pub = exec.Command(filepath.Join(e.bin, "synthetic"), "-name", "e2e", "-rate", "300", "-quiet",
		"-stages", "data_wait=6ms,h2d=0.5ms,forward=2ms,backward=1ms,optim=0.4ms,other=0s")
	e.pub.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+e.sockets)
	if err := e.pub.Start(); err != nil {
		e.t.Fatal(err)
	}
	return e.pub.Process.Pid
}

func (e *tmuxEnv) stopPublisher() {
	if e.pub != nil {
		e.pub.Process.Kill()
		e.pub.Wait()
		e.pub = nil
	}
}

func (e *tmuxEnv) kill() {
	e.stopPublisher()
	exec.Command("tmux", "-L", e.server, "kill-server").Run()
}

// waitScreen polls the pane until ok accepts it, for at most 10 s.
func (e *tmuxEnv) waitScreen(what string, ok func(string) bool) string {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var s string
	for time.Now().Before(deadline) {
		s = e.tmux("capture-pane", "-p", "-t", "e2e")
		if ok(s) {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
	return ""
}

var trailing = regexp.MustCompile(` +$`)

func widest(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, draw.Width(trailing.ReplaceAllString(l, "")))
	}
	return w
}

// TestTmuxHeaderNamesFailedTrainer attaches the real binary, in tmux, to a
// socket whose trainer speaks protocol 99: the header says which socket
// cannot be attached, why, what to do and when the next try is, instead of
// "monitor only"; a silent peer is "connecting" until the hello timeout. A
// plain pipetop without trainers still says "monitor only".
func TestTmuxHeaderNamesFailedTrainer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	bin := pipetopBin(t)
	sockets := testkit.SocketDir(t)
	sock := filepath.Join(sockets, ipc.SocketName("future", os.Getpid()))
	testkit.ServeHostile(t, sock, testkit.HostileNamed(t, "future").Serve)
	e := &tmuxEnv{t: t, server: fmt.Sprintf("pipetop-e2e-fail-%d", os.Getpid()), sockets: sockets}
	defer e.kill()
	e.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "30",
		"env", "PIPETOP_SOCKET_DIR="+sockets, "TERM=xterm-256color", bin, "attach", "future", "--interval", "250ms", "--no-gpu")
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	screen := e.waitScreen("the failure in the header", func(s string) bool {
		return strings.Contains(flat(s), "upgrade pipetop; next try in")
	})
	for _, want := range []string{"✗ cannot attach " + filepath.Base(sock),
		"trainer future (pid 4242, socket " + sock + ") speaks protocol 99; this pipetop speaks 1 — upgrade pipetop; next try in"} {
		if !strings.Contains(flat(screen), want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "monitor only") {
		t.Errorf("a trainer asked for by name is shown as monitor only:\n%s", screen)
	}

	// A peer that accepts and stays silent: "connecting" until the hello
	// timeout, then the failure.
	// (respawn-pane replaces the pane's program: killing the only session
	// would stop the tmux server under the next command.)
	silent := filepath.Join(sockets, ipc.SocketName("silent", os.Getpid()))
	testkit.ServeHostile(t, silent, testkit.HostileNamed(t, "silent").Serve)
	e.tmux("respawn-pane", "-k", "-t", "e2e",
		"env", "PIPETOP_SOCKET_DIR="+sockets, ipc.HelloTimeoutEnv+"=3s", "TERM=xterm-256color", bin, "attach", silent, "--interval", "250ms", "--no-gpu")
	e.waitScreen("connecting to the silent peer", func(s string) bool {
		return strings.Contains(s, "○ connecting to "+filepath.Base(silent)) && !strings.Contains(s, "monitor only")
	})
	e.waitScreen("the silent peer named", func(s string) bool {
		return strings.Contains(flat(s), "✗ cannot attach "+filepath.Base(silent)) && strings.Contains(flat(s), "accepted but sent no hello within 3s")
	})

	empty := testkit.SocketDir(t)
	e.tmux("respawn-pane", "-k", "-t", "e2e",
		"env", "PIPETOP_SOCKET_DIR="+empty, "TERM=xterm-256color", bin, "--interval", "250ms", "--no-gpu")
	e.waitScreen("monitor only without trainers", func(s string) bool {
		return strings.Contains(s, "monitor only: no trainer attached") && !strings.Contains(s, "cannot attach")
	})
}
