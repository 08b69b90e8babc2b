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
