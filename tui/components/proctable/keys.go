package proctable

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// KeyMap is the process table's own keys; the root offers them to the
// table and shows them in the help.
type KeyMap struct {
	Sort    key.Binding
	Filter  key.Binding
	Kill    key.Binding
	Threads key.Binding
}

// DefaultKeys are the process table's default keys.
var DefaultKeys = KeyMap{
	Sort:    key.NewBinding(key.WithKeys("f6", ">"), key.WithHelp("F6/>", "sort processes by the next column")),
	Filter:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter processes")),
	Kill:    key.NewBinding(key.WithKeys("f9"), key.WithHelp("F9", "SIGTERM the selected process (again within 5 s: SIGKILL)")),
	Threads: key.NewBinding(key.WithKeys("H"), key.WithHelp("H", "show the trainer's threads by role under their processes, with the usable cores, quota and CPU pressure")),
}

// Keys lists the table's keys for the help.
func (m *Model) Keys() []key.Binding {
	return []key.Binding{m.keys.Sort, m.keys.Filter, m.keys.Kill, m.keys.Threads}
}

// HandleKey acts on k: every key while Capturing (the filter text, the
// confirmation), else the table's own keys. It reports whether k was the
// table's.
func (m *Model) HandleKey(k tea.KeyPressMsg) (bool, tea.Cmd) {
	switch {
	case m.Capturing():
		m.Key(k)
	case key.Matches(k, m.keys.Sort):
		m.SortNext()
	case key.Matches(k, m.keys.Filter):
		m.StartFilter()
	case key.Matches(k, m.keys.Kill):
		m.Kill()
	case key.Matches(k, m.keys.Threads):
		m.threads = !m.threads
		m.refresh()
	default:
		return false, nil
	}
	return true, nil
}

// Click selects the row drawn on body line i (0: the column names).
func (m *Model) Click(i int) { m.SelectLine(i - 1) }
