// Package gpu is the GPU pane: per device the SM activity and occupancy
// labelled with their source (GPM on Hopper and later, NVML kernel-active
// otherwise), memory with the trainer's own share, power, temperature,
// clocks, PCIe and throttle reasons; the sampler's status line when there
// is no GPU; and the trainer's CUDA-event GPU busy time, which works on
// every GPU.
package gpu

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/components/pane"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// Model is the GPU pane.
type Model struct{ pane.Scrolling }

// New returns a GPU pane drawn with st.
func New(st *styles.Styles) Model { return Model{pane.NewScrolling(st)} }

// Scroll moves the lines by d, within bounds.
func (m *Model) Scroll(d int) { m.ScrollBy(d, len(m.Lines(m.W, m.lines))) }

// Title is the pane title.
func (m Model) Title() string {
	if m.Snap == nil || len(m.Snap.GPU.Devices) == 0 {
		return "GPU"
	}
	full, mig := 0, 0
	for _, d := range m.Snap.GPU.Devices {
		if d.MIG {
			mig++
		} else {
			full++
		}
	}
	t := fmt.Sprintf("GPU · %d device", full)
	if full > 1 {
		t += "s"
	}
	if mig > 0 {
		t += fmt.Sprintf(" · %d MIG", mig)
	}
	if m.Snap.GPU.Driver != "" {
		t += " · driver " + m.Snap.GPU.Driver
	}
	if m.compact() {
		t += " · * trainer"
		if len(m.Snap.GPU.Devices) > CompactRows {
			t += " · tab ↑↓ scroll"
		}
	}
	return t
}

// CompactRows is how many devices the compact view (2 devices or more)
// shows before it scrolls.
const CompactRows = 8

// Collapsed reports whether there is no device to show: the pane is then
// one line saying why (Line) and gives its space to the other panes.
func (m Model) Collapsed() bool { return m.Snap != nil && len(m.Snap.GPU.Devices) == 0 }

// Line is the collapsed pane: its title and the reason there is no GPU.
func (m Model) Line() string {
	t := "GPU · " + m.Snap.GPU.Status
	if sum := m.Snap.Summary; sum != nil && sum.HasGPU {
		t += " · trainer GPU busy " + units.Pct(sum.GPUBusy) + " (CUDA events)"
	}
	return t
}

// Size returns the fewest and the preferred number of body lines; with
// more than CompactRows devices the pane prefers CompactRows and scrolls.
func (m Model) Size(w int) (lo, pref int) {
	n := len(m.Lines(w, m.lines))
	if m.compact() { // a few devices at least, then CompactRows
		devs := len(m.Snap.GPU.Devices)
		return min(n, 3), n - devs + min(devs, CompactRows)
	}
	return min(n, 1), n
}

// compact reports whether devices get one row each (two or more).
func (m Model) compact() bool { return m.Snap != nil && len(m.Snap.GPU.Devices) > 1 }

// View renders the body.
func (m Model) View() string {
	lines := m.Lines(m.W, m.lines)
	off := m.Offset(len(lines))
	return draw.Block(strings.Join(lines[off:], "\n"), m.W, m.H)
}

func (m Model) lines(w int) []string {
	if m.Snap == nil {
		return nil
	}
	g := m.Snap.GPU
	var out []string
	if sum := m.Snap.Summary; sum != nil && sum.HasGPU {
		out = append(out, m.St.Label.Render("trainer GPU busy ")+m.St.Value.Render(units.Pct(sum.GPUBusy))+
			m.St.Dim.Render(" (CUDA events)"))
	}
	if g.Status != "" {
		out = append(out, m.St.Warn.Render(g.Status))
	}
	if m.compact() {
		for _, d := range g.Devices {
			out = append(out, m.row(d, w))
		}
		return out
	}
	for _, d := range g.Devices {
		out = append(out, m.device(d, w)...)
	}
	return out
}

// trainerGPUs is the set of GPU indexes the trainer's processes use.
func (m Model) trainerGPUs() map[int]bool {
	out := map[int]bool{}
	for _, p := range m.Snap.GPUProcesses {
		if p.Trainer {
			out[p.GPU] = true
		}
	}
	return out
}

// row is one device in the compact view: "*" marks the trainer's GPUs.
// A narrow pane drops the memory bar, then the device name, before any
// reading: util, memory, power, temperature and clock stay visible.
func (m Model) row(d snapshot.Device, w int) string {
	st := m.St
	mark := " "
	if d.TrainerMem.OK() || !d.MIG && m.trainerGPUs()[d.Index] {
		mark = "*"
	}
	index := fmt.Sprintf("%d", d.Index)
	if d.MIG {
		index = fmt.Sprintf("%d/%d", d.Index, d.MIGIndex)
	}
	head := mark + st.Value.Render(fmt.Sprintf("%-4s", index))
	name := st.Label.Render(shortName(d.Name))
	if d.Err != "" {
		return draw.Fit(head+name+"  "+st.Bad.Render(d.Err), w)
	}
	full := head + name + "  " + strings.Join(m.readings(d, true), "  ")
	if draw.Width(full) <= w {
		return full
	}
	readings := strings.Join(m.readings(d, false), "  ")
	if lean := head + name + "  " + readings; draw.Width(lean) <= w {
		return lean
	}
	return draw.Fit(head+readings, w)
}

// readings is a compact row's values: activity, memory (with a bar when
// bar), power, temperature and SM clock, those the device reports.
func (m Model) readings(d snapshot.Device, bar bool) []string {
	st := m.St
	var out []string
	if d.Readings[gpumetric.SMActivity].OK() {
		out = append(out, st.Label.Render("SM ")+st.Load(*d.Readings[gpumetric.SMActivity].Value).Render(fmt.Sprintf("%3.0f%%", *d.Readings[gpumetric.SMActivity].Value)))
	} else if d.Readings[gpumetric.KernelActive].OK() {
		out = append(out, st.Label.Render("busy ")+st.Load(*d.Readings[gpumetric.KernelActive].Value).Render(fmt.Sprintf("%3.0f%%", *d.Readings[gpumetric.KernelActive].Value)))
	}
	if d.Readings[gpumetric.MemUsed].OK() && d.Readings[gpumetric.MemTotal].OK() && *d.Readings[gpumetric.MemTotal].Value > 0 {
		used, total := *d.Readings[gpumetric.MemUsed].Value, *d.Readings[gpumetric.MemTotal].Value
		mem := st.Label.Render("mem ")
		if bar {
			mem += draw.Bar(6, used/total, st.Load(100*used/total), st.BarEmpty) + " "
		}
		out = append(out, mem+st.Value.Render(strings.ReplaceAll(units.Bytes(used), " ", "")+"/"+strings.ReplaceAll(units.Bytes(total), " ", "")))
	}
	if d.Readings[gpumetric.Power].OK() {
		out = append(out, st.Value.Render(fmt.Sprintf("%.0f W", *d.Readings[gpumetric.Power].Value)))
	}
	if d.Readings[gpumetric.Temperature].OK() {
		out = append(out, st.Value.Render(fmt.Sprintf("%.0f °C", *d.Readings[gpumetric.Temperature].Value)))
	}
	if d.Readings[gpumetric.SMClock].OK() {
		out = append(out, st.Value.Render(fmt.Sprintf("%.0f MHz", *d.Readings[gpumetric.SMClock].Value)))
	}
	return out
}

// shortName drops the vendor prefix: "H100 80GB HBM3", "MIG 1g.10gb".
func shortName(n string) string {
	n = strings.TrimPrefix(n, "NVIDIA ")
	if i := strings.Index(n, " MIG "); i >= 0 {
		return n[i+1:]
	}
	return n
}

func (m Model) device(d snapshot.Device, w int) []string {
	st := m.St
	name := fmt.Sprintf("%d", d.Index)
	if d.MIG {
		name = fmt.Sprintf("%d/MIG %d", d.Index, d.MIGIndex)
	}
	head := st.Value.Render(name) + " " + st.Label.Render(d.Name)
	if d.Err != "" {
		return []string{head + "  " + st.Bad.Render(d.Err)}
	}
	lines := draw.Flow(append([]string{head}, m.activity(d)...), "  ", w)
	lines = append(lines, m.memory(d, w))
	var info []string
	if d.Readings[gpumetric.Temperature].OK() {
		info = append(info, st.Value.Render(fmt.Sprintf("%.0f °C", *d.Readings[gpumetric.Temperature].Value)))
	}
	if d.Readings[gpumetric.Power].OK() {
		p := fmt.Sprintf("%.0f", *d.Readings[gpumetric.Power].Value)
		if d.Readings[gpumetric.PowerLimit].OK() {
			p += fmt.Sprintf("/%.0f", *d.Readings[gpumetric.PowerLimit].Value)
		}
		info = append(info, st.Value.Render(p+" W"))
	}
	if d.Readings[gpumetric.SMClock].OK() {
		c := fmt.Sprintf("%.0f", *d.Readings[gpumetric.SMClock].Value)
		if d.Readings[gpumetric.MemClock].OK() {
			c += fmt.Sprintf("/%.0f", *d.Readings[gpumetric.MemClock].Value)
		}
		info = append(info, st.Label.Render("clk ")+st.Value.Render(c+" MHz"))
	}
	if d.Readings[gpumetric.PCIeRx].OK() && d.Readings[gpumetric.PCIeTx].OK() {
		info = append(info, st.Label.Render("PCIe ")+st.Value.Render("↓"+units.Bytes(*d.Readings[gpumetric.PCIeRx].Value)+"/s ↑"+units.Bytes(*d.Readings[gpumetric.PCIeTx].Value)+"/s"))
	}
	if t := throttle(d.Throttle); t != "" {
		info = append(info, st.Warn.Render("throttle: "+t))
	}
	return append(lines, draw.Flow(info, "  ", w)...)
}

// activity labels every utilisation number with its source: GPM SM
// activity and occupancy where supported, NVML kernel-active always.
func (m Model) activity(d snapshot.Device) []string {
	st := m.St
	var parts []string
	if d.Readings[gpumetric.SMActivity].OK() {
		parts = append(parts, st.Label.Render("SM ")+st.Load(*d.Readings[gpumetric.SMActivity].Value).Render(fmt.Sprintf("%.0f %%", *d.Readings[gpumetric.SMActivity].Value))+st.Dim.Render(" (GPM)"))
		if d.Readings[gpumetric.SMOccupancy].OK() {
			parts = append(parts, st.Label.Render("occ ")+st.Value.Render(fmt.Sprintf("%.0f %%", *d.Readings[gpumetric.SMOccupancy].Value)))
		}
	}
	if d.Readings[gpumetric.KernelActive].OK() {
		parts = append(parts, st.Label.Render("busy ")+st.Value.Render(fmt.Sprintf("%.0f %%", *d.Readings[gpumetric.KernelActive].Value))+st.Dim.Render(" (kernel-active)"))
	}
	return parts
}

func (m Model) memory(d snapshot.Device, w int) string {
	st := m.St
	if !d.Readings[gpumetric.MemUsed].OK() || !d.Readings[gpumetric.MemTotal].OK() || *d.Readings[gpumetric.MemTotal].Value <= 0 {
		return st.Label.Render("mem ") + st.Dim.Render("n/a")
	}
	used, total := *d.Readings[gpumetric.MemUsed].Value, *d.Readings[gpumetric.MemTotal].Value
	text := " " + units.Bytes(used) + "/" + units.Bytes(total)
	if d.TrainerMem.OK() {
		text += " · trainer " + units.Bytes(*d.TrainerMem.Value)
	}
	bw := max(4, min(30, w-4-draw.Width(text)))
	return st.Label.Render("mem ") + draw.Bar(bw, used/total, st.Load(100*used/total), st.BarEmpty) + st.Value.Render(text)
}

// throttle lists the throttle reasons worth a look (idle is not one).
func throttle(reasons []string) string {
	var out []string
	for _, r := range reasons {
		if r != "idle" {
			out = append(out, r)
		}
	}
	return strings.Join(out, ", ")
}
