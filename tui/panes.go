package tui

import (
	"slices"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/cpu"
	"github.com/pipetop/pipetop/tui/components/flame"
	"github.com/pipetop/pipetop/tui/components/gpu"
	"github.com/pipetop/pipetop/tui/components/history"
	"github.com/pipetop/pipetop/tui/components/hotcode"
	"github.com/pipetop/pipetop/tui/components/loader"
	"github.com/pipetop/pipetop/tui/components/proctable"
	"github.com/pipetop/pipetop/tui/components/ranks"
	"github.com/pipetop/pipetop/tui/components/stages"
	"github.com/pipetop/pipetop/tui/styles"
)

// panel is a titled pane that shows snapshots: everything in the layout
// table is one.
type panel interface {
	pane
	SetSnapshot(s *snapshot.Snapshot)
}

// band names a horizontal band of the screen between the header and the
// verdict.
type band int

// The bands, top to bottom.
const (
	bandDevices band = iota // GPU and CPU side by side
	bandFlame               // where each step's time goes
	bandRanks               // the ranks of a multi-process run
	bandTable               // the stage table, toggled with s
	bandCode                // the hot code, from stack samples
	bandProcs               // GPU processes and the trainer's tree
	bandBottom              // history graphs and the loader
)

// bandSpec says how a band competes for rows: the rank at which it gets
// its minimum height and then its preferred one (0 first; the header and
// the verdict rank around them, see Model.body), whether it takes the rows
// left over, and when it is hidden.
type bandSpec struct {
	id                band
	minRank, prefRank int
	grows             bool
	hidden            func(m *Model) bool
}

// bands is the layout, top to bottom.
var bands = []bandSpec{
	{id: bandDevices, minRank: 3, prefRank: 2},
	{id: bandFlame, minRank: 2, prefRank: 1},
	{id: bandRanks, minRank: 2, prefRank: 2, hidden: func(m *Model) bool { return m.snap == nil || len(m.snap.Ranks) < 2 }},
	{id: bandTable, minRank: 4, prefRank: 3, hidden: func(m *Model) bool { return !m.showTab }},
	{id: bandCode, minRank: 5, prefRank: 5, hidden: func(m *Model) bool { return hotcode.Hidden(m.snap) }},
	{id: bandProcs, minRank: 6, prefRank: 6, grows: true},
	{id: bandBottom, minRank: 5, prefRank: 4, grows: true},
}

// paneRow places one pane: its band and how to make it. Panes of a band
// sit side by side on a wide screen, left first, and stack on a narrow
// one; tab visits panes in this order. Adding a pane is its package plus
// one row here (a band draws at most two panes: a third needs a band of
// its own, one more row in bands).
type paneRow struct {
	name string // for the settings file's hidden list
	band band
	make func(st *styles.Styles, o *Options) panel
}

var paneRows = []paneRow{
	{"gpu", bandDevices, func(st *styles.Styles, _ *Options) panel { p := gpu.New(st); return &p }},
	{"cpu", bandDevices, func(st *styles.Styles, _ *Options) panel { p := cpu.New(st); return &p }},
	{"flame", bandFlame, func(st *styles.Styles, _ *Options) panel { p := flame.New(st); return &p }},
	{"ranks", bandRanks, func(st *styles.Styles, o *Options) panel { p := ranks.New(st, o.ChooseRank, o.Keys.Ranks); return &p }},
	{"stages", bandTable, func(st *styles.Styles, _ *Options) panel { p := stages.New(st); return &p }},
	{"hotcode", bandCode, func(st *styles.Styles, o *Options) panel { p := hotcode.New(st, o.Keys.HotCode); return &p }},
	{"processes", bandProcs, func(st *styles.Styles, o *Options) panel {
		p := proctable.New(st, o.Signaler, o.Now)
		p.SortBy(o.Sort)
		p.SetKeys(o.Keys.Processes)
		return &p
	}},
	{"history", bandBottom, func(st *styles.Styles, _ *Options) panel { p := history.New(st); return &p }},
	{"loader", bandBottom, func(st *styles.Styles, _ *Options) panel { p := loader.New(st); return &p }},
}

// placed is a pane made from its row.
type placed struct {
	band band
	p    panel
}

// PaneNames are the panes the layout knows, for Options.Hidden.
func PaneNames() []string {
	names := make([]string, len(paneRows))
	for i, r := range paneRows {
		names[i] = r.name
	}
	return names
}

// makePanes makes every pane but the hidden ones (o.Hidden), each with the
// options it reads.
func makePanes(o *Options) []placed {
	var ps []placed
	for _, r := range paneRows {
		if !slices.Contains(o.Hidden, r.name) {
			ps = append(ps, placed{r.band, r.make(o.Styles, o)})
		}
	}
	return ps
}

// shown reports whether band b is on screen.
func (m *Model) shown(b band) bool {
	for _, spec := range bands {
		if spec.id == b {
			return spec.hidden == nil || !spec.hidden(m)
		}
	}
	return false
}
