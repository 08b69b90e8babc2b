package bisect

import (
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestMeasurementSettles: the measurement begins settleTime after the
// warm-up's steps are done, not at once: the viewer's one-second
// aggregates of a fast loop would otherwise bring the last warm-up steps
// (a cached phase's cache fill) into the window's stage shares.
func TestMeasurementSettles(t *testing.T) {
	m := &meter{c: Config{WarmupSteps: 5, WarmupTime: 10 * time.Second}}
	at := func(steps int64) snapshot.Snapshot {
		return snapshot.Snapshot{Totals: &stage.Totals{Steps: steps, Samples: 8 * steps}}
	}
	t0 := time.Unix(1_800_000_000, 0)
	m.observe(at(1), t0)
	m.observe(at(2000), t0.Add(4*time.Second)) // the fill, then the replay's fast steps
	if m.begun {
		t.Fatal("the measurement began when the warm-up's steps were done")
	}
	m.observe(at(3000), t0.Add(4*time.Second+settleTime/2))
	if m.begun {
		t.Fatal("the measurement began before it settled")
	}
	end := t0.Add(4*time.Second + settleTime)
	m.observe(at(4400), end)
	if !m.begun || !m.at.Equal(end) || m.base[0].steps != 4400 {
		t.Fatalf("begun %v at %v with %d steps, want at %v with 4400", m.begun, m.at, m.base[0].steps, end)
	}
}
