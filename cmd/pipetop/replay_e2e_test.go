package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
)

// TestTmuxReplayKeys plays a one-minute recording in the real binary, in
// tmux, and drives it with its keys: pause, end, back 10 s, start, faster
// and slower; a paused replay still shows where each seek took it.
func TestTmuxReplayKeys(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	bin := pipetopBin(t)
	file := filepath.Join(t.TempDir(), "minute.pipetop")
	run := rectest.Run{Name: "minute", PID: 4242, Start: time.Unix(1_700_000_000, 0), Steps: 600,
		Stages: []string{stage.DataWait, stage.Forward, stage.Other},
		Means:  []time.Duration{60 * time.Millisecond, 30 * time.Millisecond, 10 * time.Millisecond}}
	if err := rectest.Write(file, run.Entries()); err != nil {
		t.Fatal(err)
	}
	e := &tmuxEnv{t: t, server: fmt.Sprintf("pipetop-e2e-replay-%d", os.Getpid()), sockets: testkit.SocketDir(t)}
	defer e.kill()
	e.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "30",
		"env", "TERM=xterm-256color", bin, "replay", file)
	shows := func(what string, want ...string) {
		t.Helper()
		e.waitScreen(what, func(s string) bool {
			for _, w := range want {
				if !strings.Contains(s, w) {
					return false
				}
			}
			return true
		})
	}
	keys := func(k ...string) { e.tmux(append([]string{"send-keys", "-t", "e2e"}, k...)...) }

	shows("the replay playing at 1x", "▶ replay 0:0", " / 1:00", "at 1x")
	keys("p")
	shows("paused", "⏸ paused")
	keys("G")
	shows("the end while paused", "▶ replay 1:00 / 1:00")
	keys("Left")
	shows("10 s back", "▶ replay 0:50 / 1:00")
	keys("g")
	shows("the start", "▶ replay 0:00 / 1:00")
	keys("]", "]")
	shows("4x", "at 4x")
	keys("[")
	shows("2x", "at 2x")
	keys("p")
	shows("playing again from the start", "▶ replay 0:0")
	e.waitScreen("the clock moving after resume", func(s string) bool {
		return !strings.Contains(s, "⏸ paused") && !strings.Contains(s, "▶ replay 0:00 /")
	})
}
