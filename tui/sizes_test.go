package tui

import (
	"strings"
	"testing"

	"charm.land/bubbletea/v2"
)

// TestEverySizeFits renders every scenario at every size from 1x1 to
// 130x45 (in steps) and at tiny sizes like 20x5: each view must have
// exactly h lines of exactly w cells, and never panic.
func TestEverySizeFits(t *testing.T) {
	for _, sc := range scenarios {
		m := replay(t, sc)
		for w := 1; w <= 130; w += 7 {
			for h := 1; h <= 45; h += 4 {
				checkSize(t, m.Render(w, h), w, h)
			}
		}
		for _, sz := range [][2]int{{20, 5}, {40, 12}, {2, 2}, {1, 1}} {
			checkSize(t, m.Render(sz[0], sz[1]), sz[0], sz[1])
		}
	}
}

// TestKeys drives the root model with key presses, as a terminal would.
func TestKeys(t *testing.T) {
	m := replay(t, scenarios[0])
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press := func(s string) {
		t.Helper()
		var k tea.KeyPressMsg
		switch s {
		case "tab":
			k = tea.KeyPressMsg{Code: tea.KeyTab}
		case "esc":
			k = tea.KeyPressMsg{Code: tea.KeyEscape}
		default:
			k = tea.KeyPressMsg{Code: rune(s[0]), Text: s}
		}
		m.Update(k)
	}
	screen := func() string { return m.View().Content }

	if !strings.Contains(screen(), "p50/p99 per stage") {
		t.Error("a 40-line screen does not start with the stage table")
	}
	press("s")
	if strings.Contains(screen(), "p50/p99 per stage") {
		t.Error("s did not hide the stage table")
	}
	press("s")
	if !strings.Contains(screen(), "p50/p99 per stage") {
		t.Error("second s did not show the stage table")
	}
	press("?")
	if !strings.Contains(screen(), "focus previous pane") {
		t.Error("? did not show the full help")
	}
	press("?")
	press("p")
	if !strings.Contains(screen(), "paused") {
		t.Error("p did not show paused")
	}
	press("p")
	press("w")
	if m.window != 2 {
		t.Errorf("w moved the window to %d, want 2 (2m)", m.window)
	}
	press("+")
	if m.interval != Intervals[1] {
		t.Errorf("+ set the interval to %v, want %v", m.interval, Intervals[1])
	}
	press("-")
	press("-")
	if m.interval != Intervals[3] {
		t.Errorf("- - set the interval to %v, want %v", m.interval, Intervals[3])
	}
	before := m.focused()
	press("tab")
	if m.focused() == before {
		t.Error("tab did not move the focus")
	}
	press("t")
	if !m.picking {
		t.Error("t did not open the trainer picker")
	}
	press("esc")
	if _, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEscape}); cmd != nil {
		m.Update(cmd())
	}
	if m.picking {
		t.Error("esc did not close the picker")
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"}); cmd == nil {
		t.Error("q returned no command")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q did not quit")
	}
}

// TestPaneViewsFillTheirArea: each pane's View is exactly the area it was
// given, so that the layout can stack and join them without fitting each
// again.
func TestPaneViewsFillTheirArea(t *testing.T) {
	for _, sc := range scenarios {
		m := replay(t, sc)
		for _, p := range m.panes {
			for w := 1; w <= 130; w += 9 {
				for h := 1; h <= 30; h += 5 {
					p.p.SetSize(w, h)
					checkSize(t, p.p.View(), w, h)
				}
			}
		}
	}
}
