package draw

import (
	"github.com/pipetop/pipetop/tui/styles"
	"math"
	"slices"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

func TestBar(t *testing.T) {
	plain := styles.Of(lipgloss.NewStyle())
	tests := []struct {
		w    int
		frac float64
		want string
	}{
		{10, 0, "░░░░░░░░░░"},
		{10, 1, "██████████"},
		{10, 0.5, "█████░░░░░"},
		{10, 0.55, "█████▌░░░░"},
		{4, 2, "████"},
		{4, math.NaN(), "░░░░"},
		{0, 0.5, ""},
		{-3, 0.5, ""},
	}
	for _, tt := range tests {
		if got := Bar(tt.w, tt.frac, plain, plain); got != tt.want {
			t.Errorf("Bar(%d, %v) = %q, want %q", tt.w, tt.frac, got, tt.want)
		}
	}
}

func TestSpark(t *testing.T) {
	tests := []struct {
		vals []float64
		w    int
		top  float64
		want string
	}{
		{[]float64{0, 50, 100}, 3, 100, "▁▅█"},
		{[]float64{100}, 3, 100, "  █"},
		{[]float64{1, 2, 3, 4}, 2, 4, "▆█"},
		{[]float64{math.NaN(), 200}, 2, 100, " █"},
		{[]float64{1}, 0, 1, ""},
		{[]float64{1}, 1, 0, " "},
	}
	for _, tt := range tests {
		if got := Spark(tt.vals, tt.w, tt.top); got != tt.want {
			t.Errorf("Spark(%v, %d, %v) = %q, want %q", tt.vals, tt.w, tt.top, got, tt.want)
		}
	}
}

func TestFitAndBlock(t *testing.T) {
	if got := Fit("abcdef", 4); got != "abc…" {
		t.Errorf("Fit cut: %q", got)
	}
	if got := Fit("ab", 4); got != "ab  " {
		t.Errorf("Fit pad: %q", got)
	}
	red := lipgloss.NewStyle().Foreground(lipgloss.Color("#ff0000")).Render("abcdef")
	if got := Fit(red, 3); Width(got) != 3 {
		t.Errorf("Fit of styled text is %d cells wide: %q", Width(got), got)
	}
	got := Block("one\ntwo\nthree", 4, 2)
	if got != "one \ntwo " {
		t.Errorf("Block: %q", got)
	}
	if got := Block("x", 2, 3); got != "x \n  \n  " {
		t.Errorf("Block pad: %q", got)
	}
	if Block("x", 0, 3) != "" || Block("x", 3, 0) != "" {
		t.Error("Block of zero size is not empty")
	}
}

func TestRule(t *testing.T) {
	plain := styles.Of(lipgloss.NewStyle())
	if got := Rule("GPU", 10, plain, plain); got != "─ GPU ────" {
		t.Errorf("Rule: %q", got)
	}
	if got := Rule("a long title", 5, plain, plain); Width(got) != 5 {
		t.Errorf("Rule of a narrow pane is %d wide: %q", Width(got), got)
	}
}

func TestWrap(t *testing.T) {
	got := Wrap("add loader workers, cache decoded data", 15)
	want := []string{"add loader", "workers, cache", "decoded data"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
}

func TestSideBySide(t *testing.T) {
	got := SideBySide("a\nb", "c", 2, 2, 2)
	if got != "a  c \nb    " {
		t.Errorf("SideBySide: %q", got)
	}
}

func TestFlow(t *testing.T) {
	tests := []struct {
		items []string
		w     int
		want  string
	}{
		{[]string{"aa", "bb", "cc"}, 8, "aa, bb|cc"},
		{[]string{"aa", "bb", "cc"}, 10, "aa, bb, cc"},
		{[]string{"toolong", "x"}, 3, "toolong|x"},
		{nil, 10, ""},
	}
	for _, tt := range tests {
		if got := strings.Join(Flow(tt.items, ", ", tt.w), "|"); got != tt.want {
			t.Errorf("Flow(%q, %d) = %q, want %q", tt.items, tt.w, got, tt.want)
		}
	}
}

// TestSplitNeverPastTheWidth: values adding up to more than total (a
// publisher's stage times past its step's wall time: the fuzzer sent a
// stage of 6.2e18 ns in a 10 ms step, and the flame bar asked for 7e11
// cells) share the width by their own sum; NaN and negative values get none.
func TestSplitNeverPastTheWidth(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		total  float64
		want   []int
	}{
		{[]float64{6, 3, 1}, 10, []int{12, 6, 2}},
		{[]float64{3, 1}, 10, []int{6, 2}},                  // less than total: fewer cells
		{[]float64{6.2e18, 1e6, 2e6}, 1e7, []int{20, 0, 0}}, // far more than total
		{[]float64{30, 10}, 10, []int{15, 5}},
		{[]float64{math.NaN(), -5, 10}, 10, []int{0, 0, 20}},
		{[]float64{5, 5}, math.NaN(), []int{0, 0}},
	} {
		got := Split(tc.values, tc.total, 20)
		sum := 0
		for _, c := range got {
			sum += c
		}
		if !slices.Equal(got, tc.want) || sum > 20 {
			t.Errorf("Split(%v, %v, 20) = %v, want %v", tc.values, tc.total, got, tc.want)
		}
	}
}
