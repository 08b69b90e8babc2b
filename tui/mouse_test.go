package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/proctable"
	"github.com/pipetop/pipetop/tui/styles"
)

// lineOf is the screen row that contains s, -1 when none.
func lineOf(screen, s string) int {
	for i, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// TestMouse: a click focuses the pane under it (and selects the process
// row clicked); the wheel scrolls the pane under it.
func TestMouse(t *testing.T) {
	m := replay(t, scenarios[4]) // eight GPUs
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}) // hide the stage table: room for processes
	screen := m.View().Content
	y := lineOf(screen, "─ processes")
	if y < 0 {
		t.Fatalf("no process table:\n%s", screen)
	}
	m.Update(tea.MouseClickMsg{X: 10, Y: y + 3, Button: tea.MouseLeft})
	procs, ok := m.focused().(*proctable.Model)
	if !ok {
		t.Fatalf("click on the process table focused %T", m.focused())
	}
	screen = m.View().Content
	if !strings.Contains(screen, "\x1b[7m 6      40006") {
		t.Errorf("the second row is not selected after the click:\n%q", strings.Split(screen, "\n")[y+3])
	}
	procs.Kill()
	if !strings.Contains(m.Render(120, 40), "send SIGTERM to 40006 (python3 -m jupyter kernel --id 40006)?") {
		t.Error("F9 after the click does not target the clicked row")
	}
	procs.Key(tea.KeyPressMsg{Code: 'n', Text: "n"})

	m.Update(tea.MouseWheelMsg{X: 10, Y: y + 4, Button: tea.MouseWheelDown})
	if !strings.Contains(m.View().Content, "\x1b[7m 5      40005") {
		t.Error("the wheel over the process table did not move the selection down")
	}

	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24}) // the GPU pane shows 2 of 10 devices
	before := m.View().Content
	gy := lineOf(before, "─ GPU")
	if !strings.Contains(before, "*0   H100") {
		t.Fatalf("GPU 0 not on screen:\n%s", before)
	}
	for range 5 {
		m.Update(tea.MouseWheelMsg{X: 5, Y: gy + 2, Button: tea.MouseWheelDown})
	}
	if after := m.View().Content; strings.Contains(after, "*0   H100") {
		t.Errorf("the wheel did not scroll the GPU pane:\n%s", after)
	}
}

// nopReplayer is a FAKE recording player.
type nopReplayer struct{}

func (nopReplayer) Seek(time.Duration) {}
func (nopReplayer) SeekStart()         {}
func (nopReplayer) SeekEnd()           {}
func (nopReplayer) SetSpeed(int)       {}
func (nopReplayer) SetPaused(bool)     {}

// TestReplayNeverSignals: the pids of a recording are not live processes.
func TestReplayNeverSignals(t *testing.T) {
	rec := &fakeSignals{}
	m := New(Options{Styles: styles.New(false), Replay: nopReplayer{}, Signaler: rec})
	m.SetSnapshot(&snapshot.Snapshot{Process: &snapshot.Process{Alive: true, Self: snapshot.Proc{PID: 4242, Comm: "train"}}})
	m.Update(tea.KeyPressMsg{Code: tea.KeyF9}) // F9, through the keys the process table owns
	if got := m.Render(100, 30); !strings.Contains(got, "a replay shows recorded processes: no signals are sent") {
		t.Errorf("F9 in a replay:\n%s", got)
	}
	if len(rec.sent) != 0 {
		t.Errorf("sent %v", rec.sent)
	}
}
