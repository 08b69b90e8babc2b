package tui

import (
	"slices"
	"strings"
	"testing"
)

// TestAllocate checks the three rounds: minimums, preferred heights, then
// rows to spare up to the growing band's most.
func TestAllocate(t *testing.T) {
	type band struct{ lo, pref, most int }
	tests := []struct {
		name  string
		h     int
		bands []band
		want  []int
	}{
		{"minimums only", 4, []band{{2, 3, 3}, {2, 4, 10}}, []int{2, 2}},
		{"a band that does not fit gets nothing", 3, []band{{2, 3, 3}, {2, 4, 10}}, []int{3, 0}},
		{"preferred heights", 7, []band{{2, 3, 3}, {2, 4, 10}}, []int{3, 4}},
		{"spare rows grow the last band", 12, []band{{2, 3, 3}, {2, 4, 10}}, []int{3, 9}},
		{"growing stops at most", 20, []band{{2, 3, 3}, {2, 4, 10}}, []int{3, 10}},
		{"a hidden band does not grow", 20, []band{{2, 3, 3}, {0, 0, 10}}, []int{3, 0}},
		{"h < 0: preferred heights", -1, []band{{2, 3, 3}, {2, 4, 10}}, []int{3, 4}},
	}
	for _, tt := range tests {
		var bands []*region
		for _, b := range tt.bands {
			bands = append(bands, &region{lo: b.lo, pref: b.pref, most: b.most})
		}
		allocate(tt.h, bands, []int{0, 1}, []int{0, 1}, []int{1})
		var got []int
		for _, b := range bands {
			got = append(got, b.got)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: allocate(%d) = %v, want %v", tt.name, tt.h, got, tt.want)
		}
	}
}

// TestSpareRowsUsed checks that at 120x40 the history graphs take the rows
// the other panes leave, so that the verdict sits right above the key help,
// with and without the stage table, and that an 80-column screen (history
// and loader stacked) grows the history, not the loader.
func TestSpareRowsUsed(t *testing.T) {
	for _, sz := range [][2]int{{120, 40}, {80, 50}} {
		for _, table := range []bool{false, true} {
			m := replay(t, scenarios[0])
			m.showTab = table
			lines := strings.Split(m.Render(sz[0], sz[1]), "\n")
			if above := lines[len(lines)-2]; strings.TrimSpace(above) == "" {
				t.Errorf("%dx%d table=%v: blank line above the key help:\n%s", sz[0], sz[1], table, strings.Join(lines, "\n"))
			}
			if sz[0] < 100 {
				loader := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "─ loader") })
				if loader < 0 || strings.TrimSpace(lines[loader-1]) == "" {
					t.Errorf("%dx%d table=%v: history does not reach the loader pane:\n%s", sz[0], sz[1], table, strings.Join(lines, "\n"))
				}
			}
		}
	}
}

// TestBandsHoldTwoPanes: a band draws at most two panes (side by side or
// stacked); a third pane placed in one would never be drawn, so a new pane
// needs a band with room or a band of its own.
func TestBandsHoldTwoPanes(t *testing.T) {
	per := map[band][]string{}
	for _, r := range paneRows {
		per[r.band] = append(per[r.band], r.name)
	}
	for b, names := range per {
		if len(names) > 2 {
			t.Errorf("band %d holds %d panes (%s): at most two are drawn", b, len(names), strings.Join(names, ", "))
		}
	}
}
