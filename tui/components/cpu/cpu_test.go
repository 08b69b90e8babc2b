package cpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

func cores(n int) snapshot.Snapshot {
	var s snapshot.Snapshot
	for i := range n {
		v := float64(i % 101)
		s.CPU.Cores = append(s.CPU.Cores, snapshot.Reading{Value: &v, State: "ok"})
	}
	return s
}

// TestCoresFit checks that 2 to 128 cores always fit the pane: bars when
// there is room, one cell per core otherwise.
func TestCoresFit(t *testing.T) {
	for _, n := range []int{2, 8, 24, 64, 128} {
		s := cores(n)
		m := New(styles.New(false))
		m.SetSnapshot(&s)
		for _, sz := range [][2]int{{40, 3}, {59, 6}, {80, 10}, {120, 40}, {20, 2}} {
			w, h := sz[0], sz[1]
			lines := m.lines(w, h)
			if len(lines) > h && len(m.compact(w)) <= h {
				t.Errorf("%d cores at %dx%d: %d lines, more than fit", n, w, h, len(lines))
			}
			for _, l := range lines {
				if draw.Width(l) > w {
					t.Errorf("%d cores at %dx%d: line %q is %d cells", n, w, h, l, draw.Width(l))
				}
			}
		}
	}
}

func TestBarsNameEveryCore(t *testing.T) {
	s := cores(8)
	m := New(styles.New(false))
	m.SetSnapshot(&s)
	body := strings.Join(m.lines(120, 10), "\n")
	for i := range 8 {
		if !strings.Contains(body, fmt.Sprintf("c%d ", i)) {
			t.Errorf("core %d has no labelled row in\n%s", i, body)
		}
	}
}
