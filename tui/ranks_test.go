package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// plantedRun returns n ranks' summaries: 40 steps each of the same data-
// parallel step, rank straggler spending extra ms more in data_wait and
// every other rank as much more in comm, with a small per-rank spread.
func plantedRun(n, straggler int, extra float64) []snapshot.Rank {
	names := []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Comm, stage.Optim, stage.Other}
	out := make([]snapshot.Rank, n)
	for r := range n {
		ms := map[string]float64{stage.DataWait: 1, stage.H2D: 0.5, stage.Forward: 4 + float64(r%5)*0.1, stage.Backward: 3, stage.Comm: 0.5, stage.Optim: 0.4, stage.Other: 0.1}
		if r == straggler {
			ms[stage.DataWait] += extra
		} else {
			ms[stage.Comm] += extra - float64(r%5)*0.1
		}
		w := stage.NewStepRing(names, 64)
		var t0 int64
		for i := range 40 {
			rec := stage.Record{Step: int64(i), NumStages: len(names), Samples: 64}
			rec.ClearGPU()
			var wall int64
			for k, name := range names {
				rec.CPU[k] = int64(ms[name] * 1e6)
				wall += rec.CPU[k]
			}
			rec.StartNs, rec.EndNs = t0, t0+wall
			t0 = rec.EndNs
			w.Add(&rec)
		}
		sum := w.Summarize(0)
		v := verdict.Diagnose(sum, nil)
		out[r] = snapshot.Rank{Rank: r, PID: 4000 + r, Host: "node-a", Link: snapshot.LinkConnected, Summary: &sum, Verdict: &v}
	}
	return out
}

// withRanks replays a recording for the rest of the screen and adds the
// planted ranks and the run's verdict to its snapshot.
func withRanks(t testing.TB, n, straggler int) *Model {
	m := replay(t, scenarios[1])
	s := *m.snap
	s.Ranks = plantedRun(n, straggler, 8)
	run := 0
	tr := *s.Trainer
	tr.Rank, tr.WorldSize, tr.Run = &run, n, "job-7"
	s.Trainer = &tr
	var sums []verdict.RankSummary
	for _, r := range s.Ranks {
		sums = append(sums, verdict.RankSummary{Rank: r.Rank, Summary: *r.Summary})
	}
	if v, ok := verdict.DiagnoseRanks(sums); ok {
		s.Verdict = &v
	}
	m.SetSnapshot(&s)
	return m
}

func TestGoldenRanks(t *testing.T) {
	for _, tc := range []struct {
		ranks, straggler, w, h int
		want                   []string
	}{
		{2, 1, 120, 40, []string{"ranks · 2 · run job-7 · straggler rank 1", "median r0", "slowest r1", "r0 ", "r1 ", "straggler: rank 1"}},
		{2, 1, 80, 24, []string{"straggler rank 1", "r1 "}},
		{64, 37, 120, 40, []string{"ranks · 64 · run job-7 · straggler rank 37", "slowest r37", "step w/o comm ", "slowest ranks", "r37 ", "straggler: rank 37"}},
		{64, 37, 80, 24, []string{"straggler rank 37", "step w/o comm "}},
	} {
		name := fmt.Sprintf("ranks%d_%dx%d", tc.ranks, tc.w, tc.h)
		t.Run(name, func(t *testing.T) {
			got := withRanks(t, tc.ranks, tc.straggler).Render(tc.w, tc.h)
			checkSize(t, got, tc.w, tc.h)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("screen lacks %q:\n%s", want, got)
				}
			}
			golden(t, name+".txt", got)
		})
	}
}

// TestRanksStripMarksTheStraggler checks the 64-rank heat strip: one cell
// per rank, the straggler's the highest.
func TestRanksStripMarksTheStraggler(t *testing.T) {
	got := withRanks(t, 64, 37).Render(120, 40)
	for _, l := range strings.Split(got, "\n") {
		cells, ok := strings.CutPrefix(strings.TrimRight(l, " "), "step w/o comm ")
		if !ok {
			continue
		}
		r := []rune(cells)
		if len(r) != 64 {
			t.Fatalf("strip has %d cells, want 64: %q", len(r), cells)
		}
		for i, c := range r {
			if (c == '█') != (i == 37) {
				t.Errorf("rank %d drawn %q", i, c)
			}
		}
		return
	}
	t.Fatalf("no strip:\n%s", got)
}

// TestRanksPaneHiddenForOneProcess: a single-process snapshot has no ranks pane.
func TestRanksPaneHiddenForOneProcess(t *testing.T) {
	if got := replay(t, scenarios[1]).Render(120, 40); strings.Contains(got, "ranks ·") {
		t.Fatalf("ranks pane on a single-process screen:\n%s", got)
	}
}

// BenchmarkRenderRanks is one refresh's drawing at 120x40 of a run of n
// ranks (1: no ranks pane; 64: the heat strip and the slowest rows).
func BenchmarkRenderRanks(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			m := withRanks(b, n, n-1)
			s := *m.snap
			b.ReportAllocs()
			for b.Loop() {
				m.SetSnapshot(&s)
				_ = m.Render(120, 40)
			}
		})
	}
}
