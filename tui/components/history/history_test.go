package history

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

func TestColumns(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		w      int
		top    float64
		rows   int
		want   []string
	}{
		{"full, half, zero", []float64{100, 50, 0}, 3, 100, 2, []string{"█  ", "██▁"}},
		{"eighths carry to the next line", []float64{60}, 1, 100, 2, []string{"▂", "█"}},
		{"NaN is an empty column", []float64{nan, 100}, 2, 100, 2, []string{" █", " █"}},
		{"right-aligned", []float64{100}, 3, 100, 2, []string{"  █", "  █"}},
		{"only the last w values", []float64{100, 0, 0}, 2, 100, 2, []string{"  ", "▁▁"}},
		{"above top is full", []float64{300}, 1, 100, 3, []string{"█", "█", "█"}},
		{"no scale draws nothing", []float64{5}, 1, 0, 2, []string{" ", " "}},
	}
	for _, tt := range tests {
		got := columns(tt.values, tt.w, tt.top, tt.rows)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: columns(%v, %d, %v, %d) = %q, want %q", tt.name, tt.values, tt.w, tt.top, tt.rows, got, tt.want)
		}
	}
}

func TestHeights(t *testing.T) {
	data := series{vals: []float64{1}, top: 1}
	empty := series{vals: []float64{math.NaN()}, top: 100}
	tests := []struct {
		name string
		ss   []series
		h    int
		want []int
	}{
		{"fewer rows than series", []series{data, data, data}, 2, []int{1, 1, 1}},
		{"one row each", []series{data, data, data}, 3, []int{1, 1, 1}},
		{"spare rows go first to the first", []series{data, data, data}, 5, []int{2, 2, 1}},
		{"a series without readings stays one row", []series{data, empty, data}, 9, []int{4, 1, 4}},
		{"at most MaxRows each", []series{data, empty, data}, 100, []int{MaxRows, 1, MaxRows}},
	}
	for _, tt := range tests {
		got := heights(tt.ss, tt.h)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: heights(h=%d) = %v, want %v", tt.name, tt.h, got, tt.want)
		}
	}
}

// TestViewGrows checks that a taller pane draws taller graphs for the
// series with readings, every line exactly the pane's width, and that
// MaxSize is the height at which growing stops.
func TestViewGrows(t *testing.T) {
	nan := math.NaN()
	snap := &snapshot.Snapshot{History: snapshot.History{
		StepsPerSec: []float64{10, 20, 15},
		GPUBusy:     []float64{nan, nan, nan},
		CPU:         []float64{50, 100, 75},
	}}
	m := New(styles.New(false))
	m.SetSnapshot(snap)
	if got, want := m.MaxSize(60), 2*MaxRows+1; got != want {
		t.Errorf("MaxSize = %d, want %d (no GPU readings: one row)", got, want)
	}
	for _, h := range []int{1, 3, 7, 40} {
		m.SetSize(60, h)
		lines := strings.Split(m.View(), "\n")
		if len(lines) != h {
			t.Fatalf("h=%d: %d lines", h, len(lines))
		}
		for i, l := range lines {
			if draw.Width(l) != 60 {
				t.Errorf("h=%d: line %d is %d cells: %q", h, i, draw.Width(l), l)
			}
		}
		labels := 0
		for _, l := range lines {
			for _, name := range []string{"it/s", "GPU %", "CPU %"} {
				if strings.HasPrefix(l, name) {
					labels++
				}
			}
		}
		if want := min(h, 3); labels != want {
			t.Errorf("h=%d: %d series labels, want %d in\n%s", h, labels, want, strings.Join(lines, "\n"))
		}
	}
	m.SetSize(60, 7)
	lines := strings.Split(m.View(), "\n")
	if !strings.HasPrefix(lines[3], "GPU %") || !strings.HasPrefix(lines[4], "CPU %") {
		t.Errorf("7 rows: want it/s 3 rows, GPU 1, CPU 3; got\n%s", strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[3], "–") {
		t.Errorf("GPU row %q does not say it has no reading", lines[3])
	}
}
