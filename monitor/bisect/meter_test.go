package bisect

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
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

// TestCachedWarmupWaitsForTheCache: a cached phase's warm-up counts from
// the first step after its cache is full and its loader shut down (the
// phase file's clean_step), however many steps the fill took.
func TestCachedWarmupWaitsForTheCache(t *testing.T) {
	dir := t.TempDir()
	m := &meter{c: Config{WarmupSteps: 2, WarmupTime: 10 * time.Second}, name: verdict.PhaseCached, dir: dir}
	at := func(steps int64) snapshot.Snapshot {
		return snapshot.Snapshot{Totals: &stage.Totals{Steps: steps, Samples: 8 * steps}}
	}
	write := func(clean string) {
		doc := `{"schema": "pipetop-bisect-phase/1", "phase": "cached", "loader": {"seen": true}, "cache": {"batches": 1, "clean_step": ` + clean + `}}`
		if err := os.WriteFile(filepath.Join(dir, "bisect-7.json"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Unix(1_800_000_000, 0)
	write("null")
	m.observe(at(1), t0)
	m.observe(at(1), t0.Add(25*time.Second)) // a slow loader's fill: more than twice the warm-up time
	if !m.first.IsZero() || m.begun {
		t.Fatal("the warm-up began before the cache was full")
	}
	write("3")
	m.observe(at(2), t0.Add(26*time.Second))
	if !m.first.IsZero() {
		t.Fatal("the warm-up counted the step that filled the cache")
	}
	m.observe(at(3), t0.Add(27*time.Second))
	if !m.first.Equal(t0.Add(27*time.Second)) || m.from != 3 {
		t.Fatalf("first %v from step %d, want the third step's time", m.first, m.from)
	}
	m.observe(at(5), t0.Add(28*time.Second))
	m.observe(at(5), t0.Add(28*time.Second+settleTime))
	if !m.begun {
		t.Fatal("the measurement did not begin two steps and a settle after the first clean step")
	}
}

// rssGrowth: memory that stays grows the window's last third; a step's
// transient allocations, in every third, do not.
func TestRSSGrowth(t *testing.T) {
	for _, tc := range []struct {
		rss  []float64
		want int64
	}{
		{[]float64{100, 300, 100, 300, 100, 300, 100, 300, 100}, 0},
		{[]float64{100, 150, 200, 250, 300, 350, 400, 450, 500}, 300},
		{[]float64{500, 400, 300}, -200},
		{[]float64{100, 900}, 0},
	} {
		if got := rssGrowth(tc.rss); got != tc.want {
			t.Errorf("rssGrowth(%v) = %d, want %d", tc.rss, got, tc.want)
		}
	}
}

// TestWarmupWaitsForTheRanks: a run's warm-up waits for every rank of its
// world size to attach (a rank slow to answer on a loaded machine had no
// row in its phase), but not longer than WarmupTime: ranks on other
// hosts never attach here.
func TestWarmupWaitsForTheRanks(t *testing.T) {
	at := func(world int, steps ...int64) snapshot.Snapshot {
		s := snapshot.Snapshot{Trainer: &snapshot.Trainer{WorldSize: world}}
		for rank, n := range steps {
			s.Ranks = append(s.Ranks, snapshot.Rank{Rank: rank, Totals: &stage.Totals{Steps: n, Samples: 8 * n}})
		}
		return s
	}
	t0 := time.Unix(1_800_000_000, 0)
	m := &meter{c: Config{WarmupSteps: 2, WarmupTime: 10 * time.Second}}
	m.observe(at(2, 5), t0)
	m.observe(at(2, 50), t0.Add(4*time.Second))
	if !m.first.IsZero() {
		t.Fatal("the warm-up began with rank 1 not attached")
	}
	m.observe(at(2, 60, 1), t0.Add(5*time.Second))
	m.observe(at(2, 70, 10), t0.Add(6*time.Second))
	m.observe(at(2, 80, 20), t0.Add(6*time.Second+settleTime))
	if !m.begun || len(m.base) != 2 {
		t.Fatalf("begun %v with the counts of %d ranks, want both", m.begun, len(m.base))
	}
	far := &meter{c: Config{WarmupSteps: 2, WarmupTime: 10 * time.Second}}
	far.observe(at(4, 5, 5), t0)
	far.observe(at(4, 50, 50), t0.Add(10*time.Second))
	far.observe(at(4, 60, 60), t0.Add(11*time.Second))
	far.observe(at(4, 70, 70), t0.Add(11*time.Second+settleTime))
	if !far.begun {
		t.Fatal("a run with 2 of its 4 ranks here never began its measurement")
	}
}
