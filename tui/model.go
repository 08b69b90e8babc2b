// Package tui is pipetop's terminal monitor: a thin bubbletea root model
// that composes small panes (header, GPU, CPU, flame bar, stage table,
// history, loader, verdict, help, trainer picker), refreshes them from a
// monitor.Snapshotter on a timer, and renders only on refresh ticks so that
// a quiet screen costs almost nothing.
package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/signal"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/header"
	"github.com/pipetop/pipetop/tui/components/picker"
	"github.com/pipetop/pipetop/tui/components/proctable"
	"github.com/pipetop/pipetop/tui/components/ranks"
	"github.com/pipetop/pipetop/tui/components/verdict"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/screen"
	"github.com/pipetop/pipetop/tui/styles"
)

// Intervals are the refresh intervals + and - step through.
var Intervals = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}

// TallScreen is the terminal height from which the stage table is shown
// at start.
const TallScreen = 36

// Options configures the monitor.
type Options struct {
	Snapshotter *monitor.Snapshotter
	Styles      *styles.Styles
	// Theme names Run's styles when Styles is nil (styles.NewTheme).
	Theme    string
	Interval time.Duration
	Window   int // index into monitor.Windows
	// Pick opens the trainer picker at start (several trainers, no spec).
	Pick bool
	// Context bounds the feed's watches started from the picker.
	Context context.Context
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Replay, when set, is the recording being played: the seek and speed
	// keys drive it, and pausing stops its clock.
	Replay Replayer
	// ChooseRank, when set, lets the ranks pane change the rank a remote
	// view shows (r, R).
	ChooseRank ranks.Chooser
	// ReadOnly disables signals from the process table (--readonly).
	ReadOnly bool
	// Signaler sends the process table's signals; nil means
	// monitor/signal.Sender with ReadOnly.
	Signaler proctable.Signaler
	// Hidden names panes not to show (PaneNames).
	Hidden []string
	// Sort is the process table's first sort column
	// (proctable.ColumnByName); "" is GPU memory.
	Sort string
	// Keys are the screen's keys (the settings file's bindings); nil:
	// DefaultBindings.
	Keys *Keys
}

// Model is the root model.
type Model struct {
	opts Options
	st   *styles.Styles
	keys KeyMap
	help help.Model
	// footerLine is the key help last drawn, at width footerW.
	footerLine string
	footerW    int

	header  header.Model
	panes   []placed // from paneRows
	verdict verdict.Model
	picker  picker.Model

	snap     *snapshot.Snapshot
	w, h     int
	interval time.Duration
	window   int
	gen      int // refresh generation: ticks of older ones are dropped
	paused   bool
	showHelp bool
	showTab  bool
	picking  bool
	focus    int
	content  string
	areas    []area // where the last render drew each pane
}

type tickMsg struct{ gen int }

type snapMsg struct {
	gen  int
	snap snapshot.Snapshot
}

type listMsg struct {
	eps []ipc.Endpoint
	err error
}

// New returns the root model.
func New(o Options) *Model {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Keys == nil {
		k := DefaultBindings()
		o.Keys = &k
	}
	switch {
	case o.Replay != nil: // recorded pids are not this machine's processes now
		o.Signaler = noSignals{"a replay shows recorded processes: no signals are sent"}
	case o.Signaler == nil:
		o.Signaler = signal.Sender{ReadOnly: o.ReadOnly}
	}
	st := o.Styles
	h := help.New()
	if !st.Color {
		h.Styles = help.Styles{}
	}
	m := &Model{opts: o, st: st, keys: o.Keys.Root, help: h,
		header: header.New(st), panes: makePanes(&o), verdict: verdict.New(st), picker: picker.New(st),
		interval: o.Interval, window: max(0, min(o.Window, len(monitor.Windows)-1)), picking: o.Pick, focus: -1}
	m.header.SetInterval(m.interval)
	return m
}

// noSignals refuses every signal, saying why.
type noSignals struct{ why string }

func (n noSignals) Check(int) error { return errors.New(n.why) }

func (n noSignals) Signal(pid int, _ syscall.Signal) error { return n.Check(pid) }

// Init starts the first refresh.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.collect()}
	if m.picking {
		cmds = append(cmds, listTrainers)
	}
	return tea.Batch(cmds...)
}

// collect samples everything off the UI loop.
func (m *Model) collect() tea.Cmd {
	gen, c, now, w := m.gen, m.opts.Snapshotter, m.opts.Now, monitor.Windows[m.window]
	return func() tea.Msg { return snapMsg{gen: gen, snap: c.Snapshot(now(), w)} }
}

func (m *Model) tick() tea.Cmd {
	gen := m.gen
	return tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{gen} })
}

// refresh restarts the refresh cycle now (after a key changed what to show).
func (m *Model) refresh() tea.Cmd {
	m.gen++
	return m.collect()
}

func listTrainers() tea.Msg {
	eps, err := ipc.List()
	return listMsg{eps, err}
}

// Update handles messages.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if m.w == 0 && msg.Height >= TallScreen {
			m.showTab = true // room for the stage table from the start
		}
		m.w, m.h = msg.Width, msg.Height
		m.render()
	case tickMsg:
		if msg.gen == m.gen && !m.paused {
			return m, m.collect()
		}
	case snapMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		// A paused replay still shows where a seek took it: its clock,
		// not the screen, is what pause stops.
		if !m.paused || m.opts.Replay != nil {
			m.SetSnapshot(&msg.snap)
		}
		return m, m.tick()
	case listMsg:
		m.picker.SetEndpoints(msg.eps, msg.err)
		m.render()
	case picker.ChosenMsg:
		m.picking = false
		m.opts.Snapshotter.Feed.Attach(m.opts.Context, msg.Endpoint.Name)
		return m, m.refresh()
	case picker.ClosedMsg:
		m.picking = false
		m.render()
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseClickMsg:
		m.click(tea.Mouse(msg))
	case tea.MouseWheelMsg:
		m.wheel(tea.Mouse(msg))
	}
	return m, nil
}

// click focuses the pane under the mouse; on the process table it also
// selects the row clicked.
func (m *Model) click(ms tea.Mouse) {
	if ms.Button != tea.MouseLeft || m.picking || m.showHelp {
		return
	}
	p, line := m.paneAt(ms.X, ms.Y)
	if p == nil {
		return
	}
	if i := slices.Index(m.focusable(), p); i >= 0 {
		m.focus = i
	}
	if c, ok := p.(clicker); ok && line >= 1 {
		c.Click(line - 1) // under the title
	}
	m.render()
}

// wheel scrolls the pane under the mouse.
func (m *Model) wheel(ms tea.Mouse) {
	p, _ := m.paneAt(ms.X, ms.Y)
	s, ok := p.(scroller)
	if !ok || m.picking || m.showHelp {
		return
	}
	switch ms.Button {
	case tea.MouseWheelUp:
		s.Scroll(-1)
	case tea.MouseWheelDown:
		s.Scroll(+1)
	}
	m.render()
}

// key handles one key press.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return tea.Interrupt // the caller passes it on as the terminal would have
	}
	if key.Matches(k, m.keys.Quit) && !m.picking {
		return tea.Quit
	}
	if m.picking {
		var cmd tea.Cmd
		m.picker, cmd = m.picker.Update(k)
		m.render()
		return cmd
	}
	if p := m.capturing(); p != nil {
		_, cmd := p.HandleKey(k)
		m.render()
		return cmd
	}
	var cmd tea.Cmd
	switch {
	case key.Matches(k, m.keys.Help):
		m.showHelp = !m.showHelp
	case m.showHelp && k.String() == "esc":
		m.showHelp = false
	case key.Matches(k, m.keys.Pause):
		m.paused = !m.paused
		m.header.SetPaused(m.paused)
		if m.opts.Replay != nil {
			m.opts.Replay.SetPaused(m.paused)
		}
		if !m.paused {
			cmd = m.refresh()
		}
	case key.Matches(k, m.keys.Window):
		m.window = (m.window + 1) % len(monitor.Windows)
		cmd = m.refresh()
	case key.Matches(k, m.keys.Stages):
		m.showTab = !m.showTab
	case key.Matches(k, m.keys.Picker):
		m.picking = true
		cmd = listTrainers
	case key.Matches(k, m.keys.Faster):
		cmd = m.setInterval(-1)
	case key.Matches(k, m.keys.Slower):
		cmd = m.setInterval(+1)
	case m.opts.Replay != nil && m.replayKey(k):
		cmd = m.refresh()
	case key.Matches(k, m.keys.Redraw):
		cmd = screen.Redraw
	case key.Matches(k, m.keys.Focus):
		m.focus = (m.focus + 1) % len(m.focusable())
	case key.Matches(k, m.keys.FocusBack):
		n := len(m.focusable())
		m.focus = (max(0, m.focus) + n - 1) % n
	case key.Matches(k, m.keys.Up):
		m.scroll(-1)
	case key.Matches(k, m.keys.Down):
		m.scroll(+1)
	default:
		handled, pcmd := m.paneKey(k)
		if !handled {
			return nil
		}
		cmd = pcmd
	}
	m.render()
	return cmd
}

// capturing is the pane that takes every key now, nil when none does.
func (m *Model) capturing() keyed {
	for _, p := range m.panes {
		if c, ok := p.p.(capturer); ok && c.Capturing() {
			if kp, ok := p.p.(keyed); ok {
				return kp
			}
		}
	}
	return nil
}

// paneKey offers k to the panes with keys of their own, the focused one
// first, then the others top to bottom; it reports whether one took it.
func (m *Model) paneKey(k tea.KeyPressMsg) (bool, tea.Cmd) {
	order := make([]pane, 0, len(m.panes)+1)
	if f := m.focused(); f != nil {
		order = append(order, f)
	}
	for _, p := range m.panes {
		order = append(order, p.p)
	}
	for _, p := range order {
		if kp, ok := p.(keyed); ok {
			if handled, cmd := kp.HandleKey(k); handled {
				return true, cmd
			}
		}
	}
	return false, nil
}

func (m *Model) setInterval(step int) tea.Cmd {
	i := 0
	for i < len(Intervals)-1 && Intervals[i] < m.interval {
		i++
	}
	i = max(0, min(len(Intervals)-1, i+step))
	m.interval = Intervals[i]
	m.header.SetInterval(m.interval)
	if m.paused {
		return nil
	}
	return m.refresh()
}

// fullHelp is the help overlay's columns: the root's, one per pane with
// keys of its own, and the replay keys in a replay.
func (m *Model) fullHelp() [][]key.Binding {
	cols := m.keys.FullHelp()
	for _, p := range m.panes {
		if kp, ok := p.p.(keyed); ok {
			cols = append(cols, kp.Keys())
		}
	}
	if m.opts.Replay != nil {
		cols = append(cols, m.opts.Keys.Replay.bindings())
	}
	return cols
}

// helpOverlay is every key in columns, as many columns a row as fit in w
// (bubbles' help drops the columns past the width).
func (m *Model) helpOverlay(w int) string {
	h := m.help
	h.SetWidth(0)
	var rows []string
	var row [][]key.Binding
	for _, col := range m.fullHelp() {
		if len(row) > 0 && widest(h.FullHelpView(append(row, col))) > w {
			rows = append(rows, h.FullHelpView(row))
			row = nil
		}
		row = append(row, col)
	}
	if len(row) > 0 {
		rows = append(rows, h.FullHelpView(row))
	}
	return strings.Join(rows, "\n\n")
}

// widest is the width of the longest line of s.
func widest(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, draw.Width(l))
	}
	return n
}

// focusable lists the panes tab moves between, top to bottom.
func (m *Model) focusable() []pane {
	var ps []pane
	for _, p := range m.panes {
		if c, ok := p.p.(collapser); ok && c.Collapsed() {
			continue
		}
		if m.shown(p.band) {
			ps = append(ps, p.p)
		}
	}
	return ps
}

// focused is the focused pane, nil until tab is first pressed.
func (m *Model) focused() pane {
	if m.focus < 0 {
		return nil
	}
	ps := m.focusable()
	return ps[m.focus%len(ps)]
}

func (m *Model) scroll(d int) {
	if s, ok := m.focused().(scroller); ok {
		s.Scroll(d)
	}
}

// SetSnapshot shows s in every pane and redraws.
func (m *Model) SetSnapshot(s *snapshot.Snapshot) {
	m.snap = s
	m.header.SetSnapshot(s)
	for _, p := range m.panes {
		p.p.SetSnapshot(s)
	}
	m.verdict.SetSnapshot(s)
	m.render()
}

// View returns the screen drawn at the last refresh, key or resize. The
// terminal's modes (alternate screen, mouse reports, title) are the
// screen's to set (tui/screen).
func (m *Model) View() tea.View { return tea.NewView(m.content) }

// render recomputes the screen; it runs only on refreshes, keys and
// resizes, never per frame.
func (m *Model) render() {
	if m.w <= 0 || m.h <= 0 || m.snap == nil {
		m.content = ""
		return
	}
	m.content = m.Render(m.w, m.h)
}

// footer is the one-line key help at width w. The key map never changes,
// so it is drawn again only when the width does.
func (m *Model) footer(w int) string {
	if m.footerW != w || m.footerLine == "" {
		m.help.SetWidth(w)
		m.footerW, m.footerLine = w, draw.Fit(m.help.ShortHelpView(m.keys.ShortHelp()), w)
	}
	return m.footerLine
}

// Render draws the whole screen at w×h; h < 0 draws every pane at its
// preferred height (the --once text).
func (m *Model) Render(w, h int) string {
	if w <= 0 || h == 0 {
		return ""
	}
	footer := ""
	if h >= 12 || h < 0 {
		footer = m.footer(w)
	}
	if h < 0 {
		footer = ""
	}
	bodyH := h
	if footer != "" {
		bodyH--
	}
	var body string
	m.areas = m.areas[:0]
	switch {
	case m.picking:
		m.picker.SetSize(w, bodyH-1)
		m.header.SetSize(w, 1)
		body = m.header.View() + "\n" + m.picker.View()
	case m.showHelp:
		m.header.SetSize(w, 1)
		body = m.header.View() + "\n" + draw.Rule("keys", w, m.st.Focused, m.st.Rule) + "\n" + m.helpOverlay(w)
	default:
		body = m.body(w, bodyH)
	}
	if h > 0 {
		body = draw.Block(body, w, bodyH)
	}
	if footer == "" {
		return body
	}
	return body + "\n" + footer
}

// headerPrefRank is where the header's second line ranks among the bands'
// preferred heights (bands.prefRank): after the panes above the process
// table, before the process table.
const headerPrefRank = 5

// slot is one region of the body and how it competes for rows.
type slot struct {
	r                 *region
	minRank, prefRank int
	grows             bool
}

// body lays the panes out in h lines (all of them when h < 0): the header,
// the bands of the layout table, the verdict. A collapsed pane (a GPU
// pane without GPUs) is one line above its band, which its neighbours get.
func (m *Model) body(w, h int) string {
	hdr, ver := &region{}, &region{}
	hdr.lo, hdr.pref = m.header.Size(w)
	ver.lo, ver.pref = m.verdict.Size(w)
	// Minimums: header, verdict, then the bands by minRank; preferred
	// heights: verdict, the bands and the header by rank; rows to spare go
	// to the bands that grow, top first.
	slots := []slot{{r: hdr, minRank: -2, prefRank: headerPrefRank}}
	for _, spec := range bands {
		if !m.shown(spec.id) {
			continue
		}
		r := &region{}
		for _, p := range m.panes {
			switch c, ok := p.p.(collapser); {
			case p.band != spec.id:
			case ok && c.Collapsed():
				l := &region{line: c.Line()}
				l.measure(w)
				slots = append(slots, slot{r: l, minRank: spec.minRank, prefRank: spec.prefRank})
			case r.left == nil:
				r.left = p.p
			default:
				r.right = p.p
			}
		}
		if r.left != nil {
			r.measure(w)
		}
		slots = append(slots, slot{r: r, minRank: spec.minRank, prefRank: spec.prefRank, grows: spec.grows})
	}
	slots = append(slots, slot{r: ver, minRank: -1, prefRank: -1})
	all := make([]*region, len(slots))
	var growOrder []int
	for i, sl := range slots {
		all[i] = sl.r
		if sl.grows {
			growOrder = append(growOrder, i)
		}
	}
	allocate(h, all, ranked(slots, func(s slot) int { return s.minRank }), ranked(slots, func(s slot) int { return s.prefRank }), growOrder)
	focused := m.focused()
	for _, p := range m.panes {
		if f, ok := p.p.(focusAware); ok {
			f.SetFocused(p.p == focused)
		}
	}
	var parts []string
	if hdr.got > 0 {
		m.header.SetSize(w, hdr.got)
		parts = append(parts, m.header.View())
	}
	y := hdr.got
	for _, sl := range slots[1 : len(slots)-1] {
		parts = append(parts, m.renderBand(sl.r, w, y, focused))
		y += sl.r.got
	}
	if ver.got > 0 {
		m.verdict.SetSize(w, ver.got)
		parts = append(parts, m.verdict.View())
	}
	return strings.Join(nonEmpty(parts), "\n")
}

// ranked lists the slots' indices ordered by rank (stable: equal ranks
// keep screen order).
func ranked(slots []slot, rank func(slot) int) []int {
	idx := make([]int, len(slots))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return rank(slots[a]) - rank(slots[b]) })
	return idx
}
