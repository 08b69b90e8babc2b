package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

func TestBaseName(t *testing.T) {
	for in, want := range map[string]string{
		"pipetrain-rank0": "pipetrain", "sim-rank63": "sim", "pipetrain": "pipetrain",
		"a-rank": "a-rank", "a-rankx": "a-rankx", "-rank1": "-rank1", "x-rank1-rank2": "x-rank1",
	} {
		if got := BaseName(in); got != want {
			t.Errorf("BaseName(%q) = %q, want %q", in, got, want)
		}
	}
}

// rankServer publishes planted steps as one rank of run "job" until the
// test ends or stop is called: the straggler spends 8 ms in data_wait, the
// others as long in comm.
func rankServer(t *testing.T, rank int, path string, straggler bool) (stop func()) {
	t.Helper()
	names := []string{stage.DataWait, stage.Forward, stage.Comm, stage.Other}
	r := rank
	srv, err := ipc.Listen(fmt.Sprintf("t-rank%d", rank), ipc.Hello{Stages: names, Rank: &r, WorldSize: 2, Run: "job"},
		ipc.ServerOptions{Path: path, Flush: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for i := int64(0); ; i++ {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			cpu := []int64{1e6, 4e6, 9e6, 1e5}
			if straggler {
				cpu = []int64{9e6, 4e6, 1e6, 1e5}
			}
			end := time.Now().UnixNano()
			rec := stage.RecordOf(i, end-14_100_000, end, 8, cpu, nil)
			srv.Publish(&rec)
		}
	}()
	var once bool
	stop = func() {
		if !once {
			once = true
			close(done)
			srv.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestGroupAttachesEveryRank opens a monitor on one rank's name, sees both
// ranks and the straggler, then restarts rank 1 on another socket and
// sees it found again.
func TestGroupAttachesEveryRank(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ipc.DirEnv, dir)
	rankServer(t, 0, "", false)
	stop1 := rankServer(t, 1, "", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := Open(ctx, "t", Options{NoWatch: true, Sources: []source.Source{}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Group == nil || m.Group.Run() != "job" {
		t.Fatalf("not attached to run job: %+v", m.Group)
	}
	m.AwaitLink(ctx, 5*time.Second)
	s := waitSnapshot(t, m, "both ranks and the straggler", func(s snapshot.Snapshot) bool {
		return len(s.Ranks) == 2 && s.Verdict != nil && s.Verdict.Kind == verdict.Straggler
	})
	if *s.Verdict.Rank != 1 || s.Ranks[0].Rank != 0 || s.Ranks[1].PID != os.Getpid() || s.Trainer == nil || *s.Trainer.Rank != 0 {
		t.Fatalf("verdict %+v, ranks %+v", s.Verdict, s.Ranks)
	}

	stop1()
	waitSnapshot(t, m, "rank 1 gone", func(s snapshot.Snapshot) bool { return s.Ranks[1].Link == snapshot.LinkDisconnected })
	// The restarted rank: another socket (a live pid that is not ours).
	rankServer(t, 1, filepath.Join(dir, ipc.SocketName("t-rank1", os.Getppid())), false)
	waitSnapshot(t, m, "rank 1 found again", func(s snapshot.Snapshot) bool {
		return s.Ranks[1].Link == snapshot.LinkConnected && s.Ranks[1].Verdict != nil
	})
}

func waitSnapshot(t *testing.T, m *Monitor, what string, ok func(snapshot.Snapshot) bool) snapshot.Snapshot {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := m.Snapshot(time.Now(), Windows[0])
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: ranks %+v verdict %+v", what, s.Ranks, s.Verdict)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkCollectRanks is one refresh of a run of n ranks, each holding
// 5 s of steps at 50 steps/s (the 5s window): every rank's summary and
// verdict (brief: the shown rank's alone, as the screen has it), the
// straggler rule, and the trainer parts of the snapshot. One rank beside
// 64 is what the ranks cost.
func BenchmarkCollectRanks(b *testing.B) {
	names := []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Comm, stage.Optim, stage.Other}
	t0 := time.Unix(1_800_000_000, 0)
	for _, n := range []int{1, 64} {
		for _, aggs := range []bool{false, true} {
			for _, brief := range []bool{false, true} {
				b.Run(fmt.Sprintf("ranks=%d/aggs=%v/brief=%v", n, aggs, brief), func(b *testing.B) {
					g := newGroup(b.TempDir(), "bench-rank0", "bench")
					for r := range n {
						g.feeds[r] = newRankFeed(r, n, names, t0, aggs, int64(1e6+r%7*1000), brief && r > 0)
					}
					c := NewSnapshotter(nil)
					c.Group, c.BriefRanks = g, brief
					now := t0.Add(5 * time.Second)
					b.ReportAllocs()
					for b.Loop() {
						c.Snapshot(now, Windows[0])
					}
				})
			}
		}
	}
}

// newRankFeed is a feed holding 250 planted steps of rank r of n, one per
// 20 ms ending at t0 + 5 s, each waiting dw ns for data and 7 ms - dw in
// comm: as steps frames, or with aggs as agg frames of a second each; a
// brief feed with brief.
func newRankFeed(r, n int, names []string, t0 time.Time, aggs bool, dw int64, brief bool) *feed.Feed {
	f := feed.New(1 << 12)
	if brief {
		f = feed.NewBrief(1 << 12)
	}
	rank := r
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: fmt.Sprintf("bench-rank%d", r), PID: 1000 + r, Stages: names, Rank: &rank, WorldSize: n, Run: "bench"}}, t0)
	fr := &ipc.Frame{Type: ipc.TypeSteps}
	a := stage.NewAggregator(names)
	for j := range 250 {
		end := t0.Add(time.Duration(j+1) * 20 * time.Millisecond).UnixNano()
		rec := stage.RecordOf(int64(j), end-19e6, end, 64, []int64{dw, 5e5, 6e6, 5e6, 7e6 - dw, 4e5, 1e5}, nil)
		fr.Steps = append(fr.Steps, rec)
		a.Add(&rec)
		if aggs && j%50 == 49 {
			g := a.Take()
			f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeAgg, Agg: &g}}, time.Unix(0, end))
		}
	}
	if !aggs {
		f.Apply(ipc.Message{Frame: fr}, t0.Add(5*time.Second))
	}
	return f
}

// A snapshot with BriefRanks, of ranks but the lowest in brief feeds, has
// every rank's link, pid and summary (from agg frames, without the stages'
// quantiles) and the run's verdict of a full one (a straggler planted in
// data_wait), and nothing else of the ranks but the shown one.
func TestBriefRanks(t *testing.T) {
	names := []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Comm, stage.Optim, stage.Other}
	t0 := time.Unix(1_800_000_000, 0)
	for _, aggs := range []bool{false, true} {
		group := func(brief bool) *Group {
			g := newGroup(t.TempDir(), "bench-rank0", "bench")
			for r := range 8 {
				dw := int64(1e6)
				if r == 5 {
					dw = 6e6
				}
				g.feeds[r] = newRankFeed(r, 8, names, t0, aggs, dw, brief && r > 0)
			}
			return g
		}
		now := t0.Add(5 * time.Second)
		c := NewSnapshotter(nil)
		c.Group = group(false)
		full := c.Snapshot(now, Windows[0])
		c.Group, c.BriefRanks = group(true), true
		brief := c.Snapshot(now, Windows[0])
		if full.Verdict == nil || full.Verdict.Kind != verdict.Straggler || full.Verdict.Rank == nil || *full.Verdict.Rank != 5 {
			t.Fatalf("aggs %v: the planted straggler was not found: %+v", aggs, full.Verdict)
		}
		if !reflect.DeepEqual(full.Verdict, brief.Verdict) || !reflect.DeepEqual(full.Summary, brief.Summary) || full.Trainer.PID != brief.Trainer.PID {
			t.Errorf("aggs %v: the shown rank's parts differ:\nfull  %+v\nbrief %+v", aggs, full.Verdict, brief.Verdict)
		}
		for i, f := range full.Ranks {
			b := brief.Ranks[i]
			want := f.Summary
			if aggs && i > 0 {
				want = withoutQuantiles(f.Summary)
			}
			if f.Rank != b.Rank || f.PID != b.PID || f.Link != b.Link || f.Host != b.Host || !reflect.DeepEqual(want, b.Summary) {
				t.Errorf("aggs %v: rank %d differs:\nfull  %+v\nbrief %+v", aggs, f.Rank, f, b)
			}
			if f.Verdict == nil || f.Totals == nil || f.Trainer == nil {
				t.Errorf("aggs %v: full rank %d lacks its verdict, totals or trainer", aggs, f.Rank)
			}
			if i > 0 && (b.Verdict != nil || b.Totals != nil || b.Trainer != nil || b.Loader != nil) {
				t.Errorf("aggs %v: brief rank %d carries more than its summary: %+v", aggs, b.Rank, b)
			}
		}
	}
}

// A group attaching in brief gives a rank a brief feed when a lower rank
// has a feed: the lowest rank, whenever it comes, is attached in full.
func TestGroupAttachesHigherRanksInBrief(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newGroup(t.TempDir(), "x-rank0", "run")
	g.ctx, g.brief = ctx, true
	for _, r := range []int{3, 5, 1, 4} {
		g.attach(r)
	}
	for r, want := range map[int]bool{3: false, 5: true, 1: false, 4: true} {
		f := g.feeds[r]
		rank := r
		f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "x", PID: 100 + r, Stages: []string{stage.Other}, Rank: &rank, WorldSize: 6, Run: "run"}}, time.Now())
		if _, _, _, full := f.Totals(); full == want {
			t.Errorf("rank %d: brief %v, want %v", r, !full, want)
		}
	}
}

// withoutQuantiles is s without the stages' quantiles and the wait
// pattern: a brief summary of the same window.
func withoutQuantiles(s *stage.Summary) *stage.Summary {
	b := *s
	b.Waits = nil
	b.Stages = slices.Clone(s.Stages)
	for k := range b.Stages {
		b.Stages[k].P50, b.Stages[k].P99, b.Stages[k].GPUP99 = 0, 0, 0
	}
	return &b
}

// A scan reads the directory only when it changed, a socket waits to be
// asked again, or fullScan passed.
func TestGroupScanSkipsAnUnchangedDirectory(t *testing.T) {
	dir := t.TempDir()
	g := newGroup(dir, "x", "run")
	now := time.Now().Add(2 * time.Second) // the directory's time is a second old
	if g.unchanged(now) {
		t.Fatal("the first scan was skipped")
	}
	if !g.unchanged(now.Add(time.Second)) {
		t.Fatal("an unchanged directory was read again")
	}
	if g.unchanged(now.Add(fullScan + time.Second)) {
		t.Fatal("no full read after fullScan")
	}
	if err := os.WriteFile(filepath.Join(dir, "new.1.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if g.unchanged(time.Now().Add(fullScan + 2*time.Second)) {
		t.Fatal("a new socket was not looked at")
	}
	g.seen["p"] = probe{} // did not answer: asked again
	if g.unchanged(time.Now().Add(fullScan + 3*time.Second)) {
		t.Fatal("a socket waiting to be asked again was not")
	}
}
