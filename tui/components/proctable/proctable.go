// Package proctable is the process table pane: every process on every GPU
// (of all users) and the attached trainer's process tree, loader workers
// included, in one table (GPU, PID, USER, GPU MEM, SM %, CPU %, RSS,
// TIME, COMMAND) that sorts by any column, filters by text and sends
// SIGTERM, then SIGKILL, to the selected process after a confirmation.
//
// Signals go through a Signaler (monitor/signal in pipetop), which
// enforces --readonly and refuses other users' processes unless root.
package proctable

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/monitor/signal"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// KillWindow is how long after a SIGTERM a second F9 sends SIGKILL.
const KillWindow = 5 * time.Second

// MessageFor is how long a result or refusal stays under the table.
const MessageFor = 10 * time.Second

// PrefRows is how many process rows the table asks for before the screen
// has rows to spare.
const PrefRows = 6

// Signaler sends signals with the safety checks (monitor/signal.Sender).
type Signaler interface {
	// Check says why pid may not be signalled, nil when it may.
	Check(pid int) error
	// Signal sends sig to pid after the same checks.
	Signal(pid int, sig syscall.Signal) error
}

// Model is the process table.
type Model struct {
	pane.Scrolling
	sig Signaler
	now func() time.Time

	rows     []row // filtered and sorted
	sortCol  int
	filter   string
	editing  bool // typing the filter
	selected string
	focused  bool
	threads  bool // the trainer's threads under their processes (H)
	keys     KeyMap

	confirm  *pending
	termSent map[int]time.Time // SIGTERM times, for the SIGKILL window
	msg      string
	msgBad   bool
	msgAt    time.Time
}

// pending is a signal waiting for its confirmation.
type pending struct {
	pid int
	sig syscall.Signal
	cmd string
}

// New returns the table drawn with st, signalling through sig (nil:
// refuse every signal until SetSignaler); now is the clock (nil: time.Now).
// Its keys are DefaultKeys until SetKeys.
func New(st *styles.Styles, sig Signaler, now func() time.Time) Model {
	m := Model{Scrolling: pane.NewScrolling(st), sortCol: 3, termSent: map[int]time.Time{}, keys: DefaultKeys}
	m.SetSignaler(sig, now)
	return m
}

// SetKeys sets the table's keys (the settings file's bindings).
func (m *Model) SetKeys(k KeyMap) { m.keys = k }

// SetSignaler sets what sends the signals (nil: none may be sent) and
// the clock (nil: time.Now).
func (m *Model) SetSignaler(sig Signaler, now func() time.Time) {
	if sig == nil {
		sig = noSignals{}
	}
	if now == nil {
		now = time.Now
	}
	m.sig, m.now = sig, now
}

// noSignals refuses every signal.
type noSignals struct{}

func (noSignals) Check(int) error { return errors.New("no way to send signals here") }

func (n noSignals) Signal(pid int, _ syscall.Signal) error { return n.Check(pid) }

// SetFocused says whether the pane has the focus (the selection shows).
func (m *Model) SetFocused(f bool) { m.focused = f }

// Title is the pane title.
func (m Model) Title() string {
	gpu, tree := 0, 0
	for _, r := range m.rows {
		if r.gpu != "" {
			gpu++
		}
		if r.trainer {
			tree++
		}
	}
	t := fmt.Sprintf("processes · %d on GPUs · %d trainer · sort %s", gpu, tree, columns[m.sortCol].name)
	if m.filter != "" || m.editing {
		t += fmt.Sprintf(" · filter %q", m.filter)
	}
	return t
}

// Capturing reports whether the table takes every key (typing a filter,
// or waiting for a confirmation).
func (m Model) Capturing() bool { return m.editing || m.confirm != nil }

// SortNext sorts by the next column.
func (m *Model) SortNext() {
	m.sortCol = (m.sortCol + 1) % len(columns)
	m.refresh()
}

// SortBy sorts by the named column (ColumnByName); an unknown name
// leaves the order as it is.
func (m *Model) SortBy(name string) {
	if i, ok := ColumnByName(name); ok {
		m.sortCol = i
		m.refresh()
	}
}

// StartFilter starts typing the filter text.
func (m *Model) StartFilter() {
	m.editing = true
	m.msg = ""
}

// Move moves the selection by d rows.
func (m *Model) Move(d int) {
	i := m.index()
	if len(m.rows) == 0 {
		return
	}
	i = max(0, min(len(m.rows)-1, i+d))
	m.selected = m.rows[i].id()
	m.follow(i)
}

// SelectLine selects the row drawn on body line i+1 (i 0: the first row
// shown under the column names).
func (m *Model) SelectLine(i int) {
	status := m.status()
	body := max(0, m.H-1-len(status))
	off := max(0, min(m.Off, len(m.rows)-body))
	if i >= 0 && i < body && off+i < len(m.rows) {
		m.selected = m.rows[off+i].id()
	}
}

// Scroll implements the root's scroller: it moves the selection.
func (m *Model) Scroll(d int) { m.Move(d) }

// Kill asks to confirm a SIGTERM to the selected process, or a SIGKILL
// when it was sent a SIGTERM within KillWindow; a process that may not be
// signalled is refused at once.
func (m *Model) Kill() {
	m.msg, m.msgBad = "", false
	i := m.index()
	if i < 0 {
		m.say("no process selected", true)
		return
	}
	r := m.rows[i]
	if r.thread {
		m.say(fmt.Sprintf("%d is a thread: select its process to signal it", r.pid), true)
		return
	}
	if r.sigPID <= 0 {
		m.say(fmt.Sprintf("process %d is not visible here: cannot signal it", r.pid), true)
		return
	}
	if err := m.sig.Check(r.sigPID); err != nil {
		m.say(err.Error(), true)
		return
	}
	sig := syscall.SIGTERM
	if t, ok := m.termSent[r.sigPID]; ok && m.now().Sub(t) <= KillWindow {
		sig = syscall.SIGKILL
	}
	m.confirm = &pending{pid: r.sigPID, sig: sig, cmd: r.command}
}

// Key handles a key while Capturing.
func (m *Model) Key(k tea.KeyPressMsg) {
	if m.confirm != nil {
		p := m.confirm
		m.confirm = nil
		if k.String() != "y" {
			m.say("cancelled", false)
			return
		}
		if err := m.sig.Signal(p.pid, p.sig); err != nil {
			m.say(err.Error(), true)
			return
		}
		if p.sig == syscall.SIGTERM {
			m.termSent[p.pid] = m.now()
		} else {
			delete(m.termSent, p.pid)
		}
		m.say(fmt.Sprintf("sent %s to %d", signal.Name(p.sig), p.pid), false)
		return
	}
	switch k.String() {
	case "enter":
		m.editing = false
	case "esc":
		m.editing, m.filter = false, ""
	case "backspace":
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	default:
		if k.Text != "" {
			m.filter += k.Text
		}
	}
	m.refresh()
}

func (m *Model) say(s string, bad bool) { m.msg, m.msgBad, m.msgAt = s, bad, m.now() }

// SetSnapshot rebuilds the rows from the snapshot.
func (m *Model) SetSnapshot(s *snapshot.Snapshot) {
	m.Base.SetSnapshot(s)
	m.refresh()
}

// refresh filters and sorts the rows and keeps the selection.
func (m *Model) refresh() {
	m.rows = m.rows[:0]
	for _, r := range buildRows(m.Snap) {
		if match(r, m.filter) {
			m.rows = append(m.rows, r)
		}
	}
	sortRows(m.rows, m.sortCol)
	if m.threads && m.Snap != nil {
		m.rows = withThreads(m.rows, m.Snap.Threads)
	}
	if m.index() < 0 && len(m.rows) > 0 {
		m.selected = m.rows[0].id()
	}
	for pid, t := range m.termSent {
		if m.now().Sub(t) > KillWindow {
			delete(m.termSent, pid)
		}
	}
}

// index is the selected row's index, -1 when none.
func (m Model) index() int {
	for i, r := range m.rows {
		if r.id() == m.selected {
			return i
		}
	}
	return -1
}

// follow scrolls so that row i is in view.
func (m *Model) follow(i int) {
	h := m.H - 1 - len(m.status())
	if h <= 0 {
		return
	}
	switch {
	case i < m.Off:
		m.Off = i
	case i >= m.Off+h:
		m.Off = i - h + 1
	}
}

// status is the line under the table: a confirmation, a result, the
// filter being typed, or what the GPU process list may be missing.
func (m Model) status() []string {
	st := m.St
	msg := m.msg != "" && m.now().Sub(m.msgAt) < MessageFor
	switch {
	case m.confirm != nil:
		return []string{st.Warn.Render(fmt.Sprintf("send %s to %d (%s)? y to confirm, any other key cancels",
			signal.Name(m.confirm.sig), m.confirm.pid, m.confirm.cmd))}
	case msg && m.msgBad:
		return []string{st.Bad.Render(m.msg)}
	case msg:
		return []string{st.Good.Render(m.msg)}
	case m.editing:
		return []string{st.Label.Render("filter: ") + st.Value.Render(m.filter+"▏") + st.Dim.Render("  enter keeps · esc clears")}
	}
	if m.threads && m.Snap != nil {
		return []string{st.Dim.Render(cpuLine(m.Snap.Threads))}
	}
	if m.Snap != nil && len(m.Snap.GPUProcessNotes) > 0 {
		return []string{st.Dim.Render(strings.Join(m.Snap.GPUProcessNotes, "; "))}
	}
	return nil
}

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(w int) (lo, pref int) {
	if m.Snap == nil {
		return 0, 0
	}
	n := len(m.status())
	if len(m.rows) == 0 {
		return 1, 1 + n
	}
	return 2, 1 + min(len(m.rows), PrefRows) + n
}

// MaxSize is every row at once.
func (m Model) MaxSize(int) int { return 1 + len(m.rows) + len(m.status()) }

// View renders the body: the header and the rows that fit, or one line
// saying why there are none; then the status line.
func (m Model) View() string {
	status := m.status()
	if len(m.rows) == 0 {
		return draw.Block(strings.Join(append([]string{m.St.Dim.Render(m.empty())}, status...), "\n"), m.W, m.H)
	}
	cols := fit(m.W)
	lines := []string{m.header(cols)}
	body := max(0, m.H-1-len(status))
	off := max(0, min(m.Off, len(m.rows)-body))
	for i := off; i < len(m.rows) && i < off+body; i++ {
		lines = append(lines, m.line(m.rows[i], cols, i == m.index()))
	}
	for len(lines) < m.H-len(status) {
		lines = append(lines, "")
	}
	return draw.Block(strings.Join(append(lines, status...), "\n"), m.W, m.H)
}

func (m Model) empty() string {
	switch {
	case m.filter != "":
		return fmt.Sprintf("no process matches %q", m.filter)
	case m.Snap != nil && m.Snap.Remote != nil:
		return fmt.Sprintf("not available remotely: pipetop export serves no process table (run pipetop on %s for it)", cmp.Or(m.Snap.Remote.Host, m.Snap.Remote.Instance))
	case m.Snap != nil && len(m.Snap.GPU.Devices) == 0:
		return "no GPU processes (no GPU) and no trainer process"
	}
	return "no process on any GPU, no trainer process"
}

// header is the column names; the sorted one is marked.
func (m Model) header(cols []int) string {
	cells := make([]string, 0, len(cols))
	for _, i := range cols {
		name := columns[i].name
		if i == m.sortCol {
			name += "▼"
			if columns[i].text {
				name = columns[i].name + "▲"
			}
		}
		cells = append(cells, pad(name, columns[i].width, !columns[i].text))
	}
	return m.St.Label.Render(" " + strings.Join(cells, " "))
}

// line renders one row; the trainer's processes are marked with *.
func (m Model) line(r row, cols []int, selected bool) string {
	mark := " "
	if r.trainer {
		mark = "*"
	}
	cells := make([]string, 0, len(cols))
	for _, i := range cols {
		cells = append(cells, pad(columns[i].cell(r), columns[i].width, !columns[i].text))
	}
	s := draw.Fit(mark+strings.Join(cells, " "), m.W)
	if selected && m.focused {
		return m.St.Selected.Render(s)
	}
	return s
}

// pad fits s into w cells (w 0: as is), right-aligned for numbers.
func pad(s string, w int, right bool) string {
	if w == 0 {
		return s
	}
	n := draw.Width(s)
	switch {
	case n > w:
		return draw.Fit(s, w)
	case right:
		return strings.Repeat(" ", w-n) + s
	}
	return s + strings.Repeat(" ", w-n)
}
