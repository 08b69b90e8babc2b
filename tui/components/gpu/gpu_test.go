package gpu

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

func reading(v float64) snapshot.Reading { return snapshot.Reading{Value: &v, State: "ok"} }

func devices(n int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{}
	for i := range n {
		s.GPU.Devices = append(s.GPU.Devices, snapshot.Device{Index: i, MIGIndex: -1, Name: "NVIDIA A100-SXM4-80GB",
			Readings: [gpumetric.N]snapshot.Reading{gpumetric.KernelActive: reading(float64(10 * i)), gpumetric.MemUsed: reading(1 << 30),
				gpumetric.MemTotal: reading(80 << 30)}})
	}
	return s
}

// TestManyGPUsScroll: past CompactRows devices the pane prefers
// CompactRows rows and scrolls to the last device.
func TestManyGPUsScroll(t *testing.T) {
	m := New(styles.New(false))
	m.SetSnapshot(devices(12))
	if lo, pref := m.Size(80); lo != 3 || pref != CompactRows {
		t.Errorf("Size = %d, %d; want 3, %d", lo, pref, CompactRows)
	}
	if !strings.Contains(m.Title(), "12 devices") || !strings.Contains(m.Title(), "scroll") {
		t.Errorf("title %q", m.Title())
	}
	m.SetSize(80, CompactRows)
	if v := m.View(); !strings.Contains(v, " 0   A100-SXM4-80GB") || strings.Contains(v, "11  A100") {
		t.Errorf("first screen:\n%s", v)
	}
	for range 20 {
		m.Scroll(1)
	}
	if v := m.View(); !strings.Contains(v, "11  A100-SXM4-80GB  busy 110%") {
		t.Errorf("scrolled to the end:\n%s", v)
	}
}

// TestCollapsedWithoutGPU: no device is one line saying why.
func TestCollapsedWithoutGPU(t *testing.T) {
	m := New(styles.New(false))
	s := &snapshot.Snapshot{GPU: snapshot.GPU{Status: "no NVIDIA driver (libnvidia-ml.so.1 not found)"}}
	m.SetSnapshot(s)
	if !m.Collapsed() || m.Line() != "GPU · no NVIDIA driver (libnvidia-ml.so.1 not found)" {
		t.Errorf("collapsed %v, line %q", m.Collapsed(), m.Line())
	}
	m.SetSnapshot(devices(1))
	if m.Collapsed() {
		t.Error("one GPU collapsed the pane")
	}
}

// TestTrainerMarkAndMIG: the trainer's GPUs carry *, MIG slots their own
// rows.
func TestTrainerMarkAndMIG(t *testing.T) {
	s := devices(2)
	s.GPU.Devices = append(s.GPU.Devices, snapshot.Device{Index: 1, MIG: true, MIGIndex: 0, Name: "NVIDIA A100-SXM4-80GB MIG 1g.10gb"})
	s.GPUProcesses = []snapshot.GPUProcess{{GPU: 1, Trainer: true}}
	m := New(styles.New(false))
	m.SetSnapshot(s)
	m.SetSize(100, 5)
	v := m.View()
	for i, want := range []string{" 0   A100", "*1   A100", " 1/0 MIG 1g.10gb"} {
		if !strings.Contains(v, want) {
			t.Errorf("row %d lacks %q:\n%s", i, want, v)
		}
	}
	if got := m.Title(); got != "GPU · 2 devices · 1 MIG · * trainer" {
		t.Errorf("title %q", got)
	}
}

// A compact row in a narrow pane gives up the memory bar and the device
// name, never a reading.
func TestCompactRowKeepsReadingsWhenNarrow(t *testing.T) {
	s := devices(2)
	for i := range s.GPU.Devices {
		d := &s.GPU.Devices[i]
		d.Readings[gpumetric.Power], d.Readings[gpumetric.Temperature], d.Readings[gpumetric.SMClock] = reading(312), reading(62), reading(1980)
	}
	m := New(styles.New(false))
	m.SetSnapshot(s)
	for _, w := range []int{120, 60} {
		m.SetSize(w, 5)
		rows := 0
		for _, line := range strings.Split(m.View(), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			rows++
			for _, want := range []string{"busy", "mem", "312 W", "62 °C", "1980 MHz"} {
				if !strings.Contains(line, want) {
					t.Errorf("width %d: row %q lacks %q", w, line, want)
				}
			}
		}
		if rows != 2 {
			t.Errorf("width %d: %d rows, want 2", w, rows)
		}
	}
	m.SetSize(120, 5)
	if v := m.View(); !strings.Contains(v, "A100") || !strings.Contains(v, "░") {
		t.Errorf("a wide row lost its name or memory bar:\n%s", v)
	}
}
