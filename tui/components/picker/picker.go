// Package picker lets the user choose one of several live trainers.
package picker

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// ChosenMsg is sent when the user picks a trainer.
type ChosenMsg struct{ Endpoint ipc.Endpoint }

// ClosedMsg is sent when the user leaves the picker without choosing.
type ClosedMsg struct{}

// KeyMap holds the picker's keys.
type KeyMap struct {
	Up, Down, Choose, Close key.Binding
}

// DefaultKeys are the picker's default keys.
var DefaultKeys = KeyMap{
	Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
	Down:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
	Choose: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "attach")),
	Close:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
}

// Model is the trainer picker.
type Model struct {
	pane.Box
	keys   KeyMap
	eps    []ipc.Endpoint
	err    error
	cursor int
}

// New returns a picker drawn with st.
func New(st *styles.Styles) Model { return Model{Box: pane.Box{St: st}, keys: DefaultKeys} }

// SetEndpoints sets the trainers to choose from, or the error listing them.
func (m *Model) SetEndpoints(eps []ipc.Endpoint, err error) {
	m.eps, m.err = eps, err
	m.cursor = max(0, min(m.cursor, len(eps)-1))
}

// Update handles the picker's keys.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	switch {
	case key.Matches(k, m.keys.Up):
		m.cursor = max(0, m.cursor-1)
	case key.Matches(k, m.keys.Down):
		m.cursor = max(0, min(len(m.eps)-1, m.cursor+1))
	case key.Matches(k, m.keys.Choose):
		if len(m.eps) > 0 {
			ep := m.eps[m.cursor]
			return m, func() tea.Msg { return ChosenMsg{ep} }
		}
	case key.Matches(k, m.keys.Close):
		return m, func() tea.Msg { return ClosedMsg{} }
	}
	return m, nil
}

// View renders the picker.
func (m Model) View() string {
	lines := []string{draw.Rule("attach to a trainer", m.W, m.St.Focused, m.St.Rule)}
	switch {
	case m.err != nil:
		lines = append(lines, m.St.Bad.Render(m.err.Error()))
	case len(m.eps) == 0:
		lines = append(lines, m.St.Dim.Render("no live trainer in "+ipc.Dir()))
	}
	for i, ep := range m.eps {
		row := draw.Fit(fmt.Sprintf("  %-20s pid %-8d %s", ep.Name, ep.PID, ep.Path), m.W)
		if i == m.cursor {
			row = m.St.Selected.Render(row)
		}
		lines = append(lines, row)
	}
	lines = append(lines, "", m.St.Dim.Render("↑/↓ choose · enter attach · esc close"))
	return draw.Block(strings.Join(lines, "\n"), m.W, m.H)
}
