package flame

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

func TestWidthsAddUp(t *testing.T) {
	tests := []struct {
		ns []float64
		w  int
	}{
		{[]float64{6, 0.5, 2, 1, 0.4, 0.1, 0.2}, 100},
		{[]float64{1, 1, 1}, 10},
		{[]float64{1, 1, 1}, 2},
		{[]float64{5}, 7},
		{[]float64{0, 0, 3}, 9},
	}
	for _, tt := range tests {
		var segs []segment
		var total float64
		for _, ns := range tt.ns {
			segs = append(segs, segment{ns: ns})
			total += ns
		}
		cells := widths(segs, total, tt.w)
		sum := 0
		for _, c := range cells {
			sum += c
		}
		if sum != tt.w {
			t.Errorf("widths(%v, %d) = %v: %d cells, want %d", tt.ns, tt.w, cells, sum, tt.w)
		}
	}
}

func TestFitLabel(t *testing.T) {
	tests := []struct {
		label string
		n     int
		color bool
		want  string
	}{
		{"forward 2.0 ms 20 %", 25, true, " forward 2.0 ms 20 %     "},
		{"forward 2.0 ms 20 %", 10, true, " forward  "},
		{"forward 2.0 ms 20 %", 5, true, " for…"},
		{"forward 2.0 ms 20 %", 1, true, " "},
		{"forward 2.0 ms 20 %", 10, false, "|forward··"},
		{"forward 2.0 ms 20 %", 20, false, "|forward············"},
		{"forward 2.0 ms 20 %", 1, false, "|"},
	}
	for _, tt := range tests {
		if got := fitLabel(tt.label, tt.n, tt.color); got != tt.want {
			t.Errorf("fitLabel(%q, %d, %v) = %q, want %q", tt.label, tt.n, tt.color, got, tt.want)
		}
	}
}

func TestBarsSpanTheWidth(t *testing.T) {
	sum := &stage.Summary{Steps: 10, WallMean: 10e6, HasGPU: true, GPUBusy: 0.3, Stages: []stage.StageStat{
		{Name: stage.DataWait, Mean: 6e6, Share: 0.6},
		{Name: stage.Forward, Mean: 3e6, Share: 0.3, HasGPU: true, GPUMean: 3e6},
		{Name: "augment", Mean: 1e6, Share: 0.1},
	}}
	for _, color := range []bool{false, true} {
		m := New(styles.New(color))
		m.SetSnapshot(&snapshot.Snapshot{Summary: sum, Trainer: &snapshot.Trainer{}})
		for _, w := range []int{10, 31, 80, 120} {
			lines := m.lines(w)
			if len(lines) < 3 {
				t.Fatalf("w=%d: %d lines, want bars and a legend", w, len(lines))
			}
			for i := range 2 {
				if got := draw.Width(lines[i]); got != w {
					t.Errorf("color=%v w=%d: bar %d is %d cells", color, w, i, got)
				}
			}
			legend := ansi.Strip(strings.Join(lines[2:], " "))
			for _, name := range []string{"data_wait", "forward", "augment", "GPU busy 30 %"} {
				if !strings.Contains(legend, name) {
					t.Errorf("color=%v w=%d: legend lacks %q", color, w, name)
				}
			}
		}
	}
}
