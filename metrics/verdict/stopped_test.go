package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// liveRank is rank r with 30 steps of healthy work, heard from at heard,
// its step in flight begun at t0 and in stage since since (Unix ns).
func liveRank(r int, heard, t0 int64, stageName string, since int64) RankSummary {
	s := plantedRank(30, map[string]float64{stage.DataWait: 2, stage.Forward: 30, stage.Backward: 20, stage.Comm: 6, stage.Optim: 3}, 0.5)
	return RankSummary{Rank: r, Summary: s, PID: 100 + r, Host: "node1", HeardNs: heard,
		Progress: &stage.Progress{TimeNs: heard, Step: 30, StepStartNs: t0, Stage: stageName, SinceNs: since, Done: 30}}
}

func TestDiagnoseStoppedNamesTheStoppedRank(t *testing.T) {
	const now = int64(100e9)
	waiting := liveRank(0, now-0.3e9, now-6e9, stage.Comm, now-5.8e9)
	for _, tc := range []struct {
		name     string
		ranks    []RankSummary
		rank     int
		stage    string
		contains []string
	}{
		{"silent (SIGSTOP) in forward", []RankSummary{waiting, liveRank(1, now-6e9, now-6.1e9, stage.Forward, now-6.05e9)}, 1, stage.Forward,
			[]string{"rank 1 (pid 101 on node1) sent nothing for 6.0 s", "last in forward of step 30", "rank 0 in comm for 5.8 s", "ps -o stat"}},
		{"gone", []RankSummary{waiting, func() RankSummary {
			r := liveRank(1, now-6e9, now-6.1e9, stage.Backward, now-6e9)
			r.Gone = true
			return r
		}()}, 1, stage.Backward,
			[]string{"rank 1 (pid 101 on node1) is gone", "exit status"}},
		{"missing: the viewer attached after the stop", []RankSummary{waiting, {Rank: 1, Missing: true}}, 1, "",
			[]string{"rank 1 does not answer", "rank 0 in comm"}},
		{"hung live in data_wait, 4 ranks", []RankSummary{waiting, liveRank(1, now-0.2e9, now-6e9, stage.Comm, now-5.9e9),
			liveRank(2, now-0.1e9, now-6.2e9, stage.DataWait, now-6.1e9), liveRank(3, now-0.5e9, now-6e9, stage.Comm, now-5.9e9)}, 2, stage.DataWait,
			[]string{"rank 2 (pid 102 on node1) hangs", "in data_wait for 6.1 s", "rank 0 in comm", "rank 3 in comm"}},
		{"the others wait in backward (first step, DDP's wait not yet known)", []RankSummary{liveRank(0, now-0.3e9, now-6e9, stage.Backward, now-5.8e9),
			liveRank(1, now-6e9, now-6.1e9, stage.Forward, now-6.05e9)}, 1, stage.Forward, []string{"sent nothing", "rank 0 in backward"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := DiagnoseStopped(tc.ranks, now)
			if !ok {
				t.Fatal("no stopped rank named")
			}
			if v.Kind != RankStopped || v.Rank == nil || *v.Rank != tc.rank || v.Stage != tc.stage {
				t.Fatalf("got %s rank %v stage %q (%s), want rank %d stage %q", v.Kind, v.Rank, v.Stage, v, tc.rank, tc.stage)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			// The stopped rank wins over everything else, straggler included.
			if got := Judge(Inputs{Summary: tc.ranks[0].Summary, NowNs: now, Live: true, Ranks: tc.ranks}); got.Kind != RankStopped {
				t.Errorf("Judge = %s, want rank-stopped", got)
			}
		})
	}
}

func TestDiagnoseStoppedLeavesRunningRanksAlone(t *testing.T) {
	const now = int64(100e9)
	running := func(r int) RankSummary { return liveRank(r, now-0.2e9, now-0.02e9, stage.Forward, now-0.01e9) }
	for _, tc := range []struct {
		name  string
		ranks []RankSummary
	}{
		{"both step", []RankSummary{running(0), running(1)}},
		{"one gone at the end, the other still stepping", []RankSummary{running(0), func() RankSummary { r := running(1); r.Gone = true; return r }()}},
		{"both gone (the run ended)", []RankSummary{func() RankSummary { r := running(0); r.Gone = true; return r }(), func() RankSummary { r := running(1); r.Gone = true; return r }()}},
		{"two ranks blocked outside comm: which one holds the other is unknown", []RankSummary{liveRank(0, now-0.3e9, now-6e9, stage.Backward, now-5.8e9),
			liveRank(1, now-0.2e9, now-6.1e9, stage.Forward, now-6.05e9)}},
		{"a missing rank while the other has waited only 1.5 s (a late start)", []RankSummary{liveRank(0, now-0.3e9, now-1.5e9, stage.Comm, now-1.4e9), {Rank: 1, Missing: true}}},
		{"a rank in a long comm, nobody stopped", []RankSummary{liveRank(0, now-0.1e9, now-0.2e9, stage.Comm, now-0.15e9), running(1)}},
		{"one rank", []RankSummary{liveRank(0, now-6e9, now-6e9, stage.Forward, now-6e9)}},
		// What a viewer saw of two healthy DDP ranks of 50 ms steps: each
		// rank's latest progress sample is 1.5 s old (sampled once a second,
		// held for the viewer's refresh), taken 20 ms into its step.
		{"progress samples a refresh old, 20 ms into their steps", []RankSummary{liveRank(0, now-1.5e9, now-1.52e9, stage.Comm, now-1.51e9),
			liveRank(1, now-1.5e9, now-1.52e9, stage.Forward, now-1.51e9)}},
		{"the sampled step has ended since", []RankSummary{liveRank(0, now-0.3e9, now-6e9, stage.Comm, now-5.8e9), func() RankSummary {
			r := liveRank(1, now-0.2e9, now-6.1e9, stage.Forward, now-6.05e9)
			r.Progress.Step = r.Summary.LastStep
			return r
		}()}},
		{"a recording: no clock", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, ok := DiagnoseStopped(tc.ranks, now); ok {
				t.Fatalf("flagged: %s", v)
			}
		})
	}
	if _, ok := DiagnoseStopped([]RankSummary{running(0), {Rank: 1, Missing: true}}, 0); ok {
		t.Error("flagged without a clock")
	}
}
