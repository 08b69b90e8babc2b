package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

// TestHelpShowsEveryKey: the help overlay wraps its columns at narrow
// widths rather than dropping the ones that do not fit (the root's, each
// pane's, the replay's).
func TestHelpShowsEveryKey(t *testing.T) {
	for _, w := range []int{60, 80, 120, 200} {
		m := New(Options{Styles: styles.New(false), Replay: nopReplayer{}})
		m.Update(tea.WindowSizeMsg{Width: w, Height: 60})
		m.SetSnapshot(&snapshot.Snapshot{})
		m.Update(tea.KeyPressMsg{Code: '?', Text: "?"})
		screen := m.Render(w, 60)
		for _, want := range []string{"quit", "window 5s/30s/2m/all", "refresh slower", "filter processes", "SIGTERM the selected", "play faster"} {
			if !strings.Contains(screen, want) {
				t.Errorf("width %d: help lacks %q:\n%s", w, want, screen)
			}
		}
	}
}

// TestReboundKeys: the keys the settings file binds drive the screen and
// its panes, and the help shows them in place of the defaults.
func TestReboundKeys(t *testing.T) {
	keys := DefaultBindings()
	for name, k := range map[string][]string{"quit": {"ctrl+q"}, "process-kill": {"f8"}, "help": {"h", "?"}} {
		if err := keys.Bind(name, k); err != nil {
			t.Fatal(err)
		}
	}
	m := New(Options{Styles: styles.New(false), Keys: &keys})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 60})
	m.SetSnapshot(&snapshot.Snapshot{})
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"}); cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Error("q still quits once quit is ctrl+q")
		}
	}
	m.Update(tea.KeyPressMsg{Code: 'h', Text: "h"})
	screen := m.Render(120, 60)
	for _, want := range []string{"ctrl+q", "quit", "f8", "SIGTERM the selected", "h/?"} {
		if !strings.Contains(screen, want) {
			t.Errorf("help lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "F9") {
		t.Errorf("help still shows the default F9:\n%s", screen)
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: 'q', Mod: tea.ModCtrl})
	if cmd == nil {
		t.Fatal("ctrl+q does nothing")
	}
	if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Errorf("ctrl+q gives %T, want quit", cmd())
	}
}
