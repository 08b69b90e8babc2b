// Package loader shows the data loader's own statistics: throughput,
// worker busy share, ready-queue depth, decoded-chunk cache hit rate and
// read amplification (bytes decompressed per byte used); for a PyTorch
// DataLoader, each worker's busy share and its prefetch and pin_memory
// settings instead of the cache figures, and the read amplification of the
// Zarr arrays and video streams (frames decoded per frame returned) it
// read.
package loader

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the loader pane.
type Model struct{ pane.Base }

// New returns a loader pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.New(st)} }

// Title is the pane title.
func (m Model) Title() string { return "loader" }

// Size returns the fewest and the preferred number of body lines.
func (m Model) Size(w int) (lo, pref int) { return 1, len(m.Lines(w, m.lines)) }

// View renders the body.
func (m Model) View() string { return draw.Block(strings.Join(m.Lines(m.W, m.lines), "\n"), m.W, m.H) }

func (m Model) lines(w int) []string {
	if m.Snap == nil {
		return nil
	}
	l := m.Snap.Loader
	if l == nil {
		if m.Snap.Remote != nil {
			return []string{m.St.Dim.Render("loader statistics: not available remotely")}
		}
		return []string{m.St.Dim.Render("no loader statistics published")}
	}
	st := m.St
	workers := fmt.Sprintf("%d workers", l.Workers)
	if l.Workers == 0 {
		workers = "inline (no workers)"
	}
	items := []string{
		st.Value.Render(units.Rate(l.SamplesPerSec)) + st.Label.Render(" samples/s"),
		st.Label.Render(workers+" busy ") + st.Load(100*l.WorkerBusy).Render(units.Pct(l.WorkerBusy)),
		st.Label.Render("queue ") + st.Value.Render(fmt.Sprintf("%d/%d", l.QueueDepth, l.QueueCap)),
	}
	if l.Source == "torch" {
		items = append(items, m.torch(l)...)
	} else {
		items = append(items,
			st.Label.Render("cache hit ")+st.Value.Render(units.Pct(l.CacheHitRate)),
			st.Label.Render("read amp ")+m.amp(l.ReadAmp))
	}
	if l.Errors > 0 {
		items = append(items, st.Bad.Render(fmt.Sprintf("%s errors", units.Count(l.Errors))))
	}
	return draw.Flow(items, st.Rule.Render(" · "), w)
}

func (m Model) amp(a float64) string {
	s := fmt.Sprintf("%.1f×", a)
	if a >= verdict.HighReadAmp {
		return m.St.Bad.Render(s)
	}
	return m.St.Value.Render(s)
}

// mostAmplified is the video stream that decodes the most frames per
// frame returned; nil when there is none.
func mostAmplified(vs []stage.VideoStream) *stage.VideoStream {
	var best *stage.VideoStream
	for i := range vs {
		if best == nil || vs[i].ReadAmp > best.ReadAmp {
			best = &vs[i]
		}
	}
	return best
}

// torch is the PyTorch DataLoader's own items: each worker's busy share,
// prefetch_factor and pin_memory.
func (m Model) torch(l *stage.LoaderStats) []string {
	st := m.St
	var items []string
	if len(l.WorkerBusyEach) > 0 {
		each := make([]string, len(l.WorkerBusyEach))
		for i, f := range l.WorkerBusyEach {
			each[i] = st.Load(100 * f).Render(units.Pct(f))
		}
		items = append(items, st.Label.Render("each ")+strings.Join(each, " "))
	}
	if len(l.Zarr) > 0 {
		items = append(items, st.Label.Render("zarr read amp ")+m.amp(l.ReadAmp))
	}
	if len(l.HDF5) > 0 {
		items = append(items, st.Label.Render("hdf5 read amp ")+m.amp(stage.HDF5ReadAmp(l))+m.counted(l))
	}
	if t := l.Trip; t != nil && t.Batches > 0 {
		items = append(items, m.trip(t))
	}
	if v := mostAmplified(l.Video); v != nil {
		item := st.Label.Render("video read amp ") + m.amp(v.ReadAmp)
		if v.GOP > 0 {
			item += st.Label.Render(fmt.Sprintf(" (GOP %d)", v.GOP))
		}
		items = append(items, item+m.counted(l))
	}
	pin := "off"
	if l.PinMemory {
		pin = "on"
	}
	return append(items,
		st.Label.Render("prefetch ")+st.Value.Render(fmt.Sprint(l.Prefetch)),
		st.Label.Render("pin_memory ")+st.Value.Render(pin))
}

// counted notes the share of the time HDF5 and video reads were counted
// in, when not all of it.
func (m Model) counted(l *stage.LoaderStats) string {
	if l.CountedShare <= 0 || l.CountedShare >= 1 {
		return ""
	}
	return m.St.Label.Render(" counted " + units.Pct(l.CountedShare))
}

// trip is the bytes a batch carries from the workers, with the factor of
// float images that could be uint8 when the verdict would name them.
func (m Model) trip(t *stage.BatchTrip) string {
	item := m.St.Label.Render("batch ") + m.St.Value.Render(units.Bytes(float64(t.BytesPerBatch)))
	if f := verdict.Uint8Factor(t); f > 0 {
		item += m.St.Bad.Render(fmt.Sprintf(" float %dx uint8", f))
	}
	return item
}
