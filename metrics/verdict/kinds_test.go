package verdict

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// TestVerdictsDocumented fails when docs/verdicts.md has no row for a kind
// of the verdict table, or a kind's row does not name one of its thresholds
// with its value.
func TestVerdictsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/verdicts.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, k := range Kinds {
		row := docRow(lines, k.Anchor)
		if row == "" {
			t.Errorf("docs/verdicts.md has no row with id=%q for kind %s", k.Anchor, k.Kind)
			continue
		}
		if !strings.Contains(row, "`"+string(k.Kind)+"`") {
			t.Errorf("docs/verdicts.md row %q does not name kind %s", k.Anchor, k.Kind)
		}
		for _, th := range k.Thresholds {
			if !strings.Contains(row, "`"+th.Name+"`") {
				t.Errorf("docs/verdicts.md row %s lacks threshold %s", k.Anchor, th.Name)
			} else if !mentionsValue(row, th.Value) {
				t.Errorf("docs/verdicts.md row %s names %s without its value %g (as %v)", k.Anchor, th.Name, th.Value, renderings(th.Value))
			}
		}
	}
}

// docRow is the line holding the anchor id, "" when none.
func docRow(lines []string, anchor string) string {
	for _, l := range lines {
		if strings.Contains(l, `id="`+anchor+`"`) {
			return l
		}
	}
	return ""
}

func mentionsValue(row string, v float64) bool {
	for _, r := range renderings(v) {
		if strings.Contains(row, r) {
			return true
		}
	}
	return false
}

// renderings are the ways the docs write a threshold's value: as is, as a
// percentage, a multiple, or in seconds, minutes, milliseconds or
// megabytes.
func renderings(v float64) []string {
	out := []string{fmt.Sprintf("%g", v), fmt.Sprintf("%g×", v), fmt.Sprintf("%gx", v)}
	if v < 1 {
		out = append(out, fmt.Sprintf("%g %%", math.Round(1e6*v)/1e4))
	}
	if v >= 1e6 {
		out = append(out, fmt.Sprintf("%g s", v/1e9), fmt.Sprintf("%g min", v/60e9), fmt.Sprintf("%g ms", v/1e6), fmt.Sprintf("%g MB", v/1e6))
	}
	return out
}

// TestKindsTable checks the table's own consistency: every kind once, an
// anchor each, and the healthy kinds good or (compute-bound) shown as work
// to do.
func TestKindsTable(t *testing.T) {
	seen := map[Kind]bool{}
	for _, k := range Kinds {
		if seen[k.Kind] {
			t.Errorf("kind %s listed twice", k.Kind)
		}
		seen[k.Kind] = true
		if k.Anchor == "" {
			t.Errorf("kind %s has no docs anchor", k.Kind)
		}
	}
	if Precedence(Straggler) >= Precedence(Stalled) || Precedence(MemoryFull) >= Precedence(InputBound) || Precedence(Balanced) != len(Kinds)-1 {
		t.Error("precedence: straggler before stalled, memory before throughput, balanced last")
	}
	if (Verdict{Kind: "from-a-newer-pipetop"}).Severity() != SeverityBad {
		t.Error("an unknown kind must read as bad")
	}
}
