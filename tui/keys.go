package tui

import "charm.land/bubbles/v2/key"

// KeyMap is the root's keys; panes with keys of their own (the process
// table's sort, filter and signal) hold them (keyed), and the help overlay
// is generated from both.
type KeyMap struct {
	Quit      key.Binding
	Pause     key.Binding
	Focus     key.Binding
	FocusBack key.Binding
	Window    key.Binding
	Stages    key.Binding
	Picker    key.Binding
	Faster    key.Binding
	Slower    key.Binding
	Redraw    key.Binding
	Up        key.Binding
	Down      key.Binding
	Help      key.Binding
}

// DefaultKeys are pipetop's keys.
var DefaultKeys = KeyMap{
	Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
	Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
	Focus:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "focus next pane")),
	FocusBack: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "focus previous pane")),
	Window:    key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "window 5s/30s/2m/all")),
	Stages:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stage table (p50/p99)")),
	Picker:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "pick trainer")),
	Faster:    key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "refresh faster")),
	Slower:    key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "refresh slower")),
	Redraw:    key.NewBinding(key.WithKeys("ctrl+l"), key.WithHelp("ctrl+l", "redraw")),
	Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "scroll focused pane")),
	Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "scroll focused pane")),
	Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
}

// ShortHelp is the footer line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.Pause, k.Window, k.Stages, k.Picker, k.Focus, k.Faster, k.Slower}
}

// FullHelp is the help overlay, in columns.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Quit, k.Pause, k.Redraw, k.Help},
		{k.Window, k.Stages, k.Picker},
		{k.Focus, k.FocusBack, k.Up, k.Down},
		{k.Faster, k.Slower},
	}
}
