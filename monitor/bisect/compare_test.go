package bisect_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/bisect/bisecttest"
)

// TestCompareOrder: A's phases in its order, then those only B has, each
// absent from the other report.
func TestCompareOrder(t *testing.T) {
	a, b := bisecttest.Constructed(600), bisecttest.Constructed(600)
	a.Phases = slices.Delete(a.Phases, 0, 1) // A has no loader phase
	b.Phases = b.Phases[:1]                  // B has the loader alone
	c := bisect.Compare(a, b)
	var got []string
	for _, p := range c.Phases {
		got = append(got, p.Phase+":"+p.StatusA+":"+p.StatusB)
	}
	want := []string{"cached:skipped:absent", "forward:failed:absent", "full:ok:absent", "loader:absent:ok"}
	if !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if _, err := c.Judge(5); !errors.Is(err, bisect.ErrNoFull) {
		t.Errorf("gate without B's full phase: %v", err)
	}
}

// TestJudgeNeedsAFullA: A whose full phase failed cannot be a baseline.
func TestJudgeNeedsAFullA(t *testing.T) {
	a := bisecttest.Constructed(600)
	a.Phases[3] = verdict.PhaseResult{Name: verdict.PhaseFull, Status: verdict.PhaseFailed}
	c := bisect.Compare(a, bisecttest.Constructed(600))
	if _, err := c.Judge(5); !errors.Is(err, bisect.ErrNoFull) || c.Gate != nil {
		t.Errorf("gate on A's failed full phase: %v, %+v", err, c.Gate)
	}
}
