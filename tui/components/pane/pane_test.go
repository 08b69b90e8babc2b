package pane

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

func TestScrollStaysInRange(t *testing.T) {
	tests := []struct {
		name       string
		off, d     int
		n, h       int
		want       int
		wantOffset int
	}{
		{"down within", 0, 2, 10, 4, 2, 2},
		{"down past the end", 5, 9, 10, 4, 6, 6},
		{"up past the top", 1, -3, 10, 4, 0, 0},
		{"all fits", 0, 3, 3, 4, 0, 0},
		{"no lines", 0, 1, 0, 4, 0, 0},
	}
	for _, tt := range tests {
		s := NewScrolling(styles.New(false))
		s.SetSize(80, tt.h)
		s.Off = tt.off
		s.ScrollBy(tt.d, tt.n)
		if s.Off != tt.want {
			t.Errorf("%s: ScrollBy(%d, %d) from %d left Off %d, want %d", tt.name, tt.d, tt.n, tt.off, s.Off, tt.want)
		}
		if got := s.Offset(tt.n); got != tt.wantOffset {
			t.Errorf("%s: Offset(%d) = %d, want %d", tt.name, tt.n, got, tt.wantOffset)
		}
	}
}

// TestOffsetFollowsSize checks that an offset kept from a short pane is
// clamped again once the pane grows.
func TestOffsetFollowsSize(t *testing.T) {
	s := NewScrolling(styles.New(false))
	s.SetSize(80, 2)
	s.ScrollBy(10, 10)
	if s.Off != 8 {
		t.Fatalf("Off = %d, want 8", s.Off)
	}
	s.SetSize(80, 6)
	if got := s.Offset(10); got != 4 {
		t.Errorf("Offset after growing = %d, want 4", got)
	}
}

func TestSetters(t *testing.T) {
	st := styles.New(false)
	b := New(st)
	snap := &snapshot.Snapshot{}
	b.SetSnapshot(snap)
	b.SetSize(3, 7)
	if b.St != st || b.Snap != snap || b.W != 3 || b.H != 7 {
		t.Errorf("Base = %+v, want styles, snapshot and size 3x7", b)
	}
}

// Lines renders once per snapshot and width.
func TestLinesRendersOncePerSnapshotAndWidth(t *testing.T) {
	b := New(styles.New(false))
	calls := 0
	render := func(w int) []string { calls++; return []string{strings.Repeat("x", w)} }
	s1, s2 := &snapshot.Snapshot{}, &snapshot.Snapshot{}
	b.SetSnapshot(s1)
	b.Lines(10, render)
	b.Lines(10, render)
	if calls != 1 {
		t.Fatalf("rendered %d times for one snapshot and width", calls)
	}
	if got := b.Lines(12, render); calls != 2 || got[0] != strings.Repeat("x", 12) {
		t.Fatalf("a new width: %d renders, %q", calls, got)
	}
	b.SetSnapshot(s2)
	b.Lines(12, render)
	if calls != 3 {
		t.Fatalf("a new snapshot: %d renders, want 3", calls)
	}
	if (Base{}).Lines(5, render); calls != 4 {
		t.Fatal("a Base made without New must render every time")
	}
}
