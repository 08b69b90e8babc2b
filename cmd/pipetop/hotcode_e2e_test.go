package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTmuxHotCode runs an unmodified PyTorch script under pipetop run in a
// real tmux session: the monitor opens on it, the hot code pane names the
// workers' function from the live stack samples, and c walks the pane
// through the training thread's stages and back to following the verdict.
func TestTmuxHotCode(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	tm := &tmuxEnv{t: t, server: fmt.Sprintf("pipetop-hotcode-%d", os.Getpid()), sockets: e.sockets}
	defer tm.kill()
	script, err := filepath.Abs(example("in_turn.py"))
	if err != nil {
		t.Fatal(err)
	}
	tm.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40",
		"env", "PIPETOP_SOCKET_DIR="+e.sockets, "PIPETOP_CACHE_DIR="+e.cache, "PIPETOP_SUMMARY_DIR="+t.TempDir(), "TERM=xterm-256color",
		e.bin, "run", "--no-gpu", "--", debPython, script, "--workers", "2", "--batch-ms", "200", "--seconds", "40")
	// torch and the workers take a while to start on a loaded machine.
	var screen string
	for end := time.Now().Add(40 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		screen = tm.tmux("capture-pane", "-p", "-t", "e2e")
		if strings.Contains(screen, "hot code · 2 workers") && strings.Contains(screen, "read_from_storage") {
			break
		}
	}
	if !strings.Contains(screen, "hot code · 2 workers") || !strings.Contains(screen, "follows the verdict") {
		t.Fatalf("no hot code pane following the workers; screen:\n%s", screen)
	}
	tm.tmux("send-keys", "-t", "e2e", "s") // the stage table gives its rows to the panes below
	screen = tm.waitScreen("the stage table hidden", func(s string) bool { return !strings.Contains(s, "─ stages ·") && strings.Contains(s, "self:") })
	for _, want := range []string{"in `read_from_storage` at", "Slow.__getitem__", "self: "} {
		if !strings.Contains(strings.Join(strings.Fields(screen), " "), want) {
			t.Errorf("the hot code pane lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "DataLoader.__iter__") {
		t.Errorf("the workers' stacks hold the frames of the parent that forked them:\n%s", screen)
	}
	tm.tmux("send-keys", "-t", "e2e", "c")
	tm.waitScreen("c showing the training thread's first stage", func(s string) bool {
		return strings.Contains(s, "hot code · training thread in data_wait") && strings.Contains(s, " of ")
	})
	for range 8 {
		tm.tmux("send-keys", "-t", "e2e", "c")
		time.Sleep(300 * time.Millisecond)
		if strings.Contains(tm.tmux("capture-pane", "-p", "-t", "e2e"), "follows the verdict") {
			return
		}
	}
	t.Errorf("c never came back to following the verdict; screen:\n%s", tm.tmux("capture-pane", "-p", "-t", "e2e"))
}
