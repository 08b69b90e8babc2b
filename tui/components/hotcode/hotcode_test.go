package hotcode

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

// profile is a run whose workers read a zarr array and whose training
// thread waits for them.
func profile() *stage.CodeProfile {
	w := 0
	frames := []stage.CodeFrame{
		{Name: "_worker_loop", File: "torch/utils/data/_utils/worker.py", Line: 302, Lib: "torch"},
		{Name: "ZDS.__getitem__", File: "dataset.py", Line: 41},
		{Name: "Array.__getitem__", File: "zarr/core.py", Line: 807, Lib: "zarr"},
		{Name: "Array._process_chunk", File: "zarr/core.py", Line: 1921, Lib: "zarr"},
		{Name: "<module>", File: "train.py", Line: 14},
		{Name: "_BaseDataLoaderIter.__next__", File: "torch/utils/data/dataloader.py", Line: 628, Lib: "torch"},
	}
	return stage.ProfileOf(&stage.StackSamples{TimeNs: 1, Hz: 100, Frames: frames, Rows: []stage.StackRow{
		{Role: stage.RoleWorker, Worker: &w, Stack: []int{0, 1, 2, 3}, N: 90, Ns: 900e6},
		{Role: stage.RoleWorker, Worker: &w, Stack: []int{0, 1}, N: 10, Ns: 100e6},
		{Role: stage.RoleTrain, Stage: stage.DataWait, Stack: []int{4, 5}, N: 80, Ns: 800e6},
		{Role: stage.RoleTrain, Stage: stage.Forward, Stack: []int{4}, N: 20, Ns: 200e6},
	}})
}

func TestHotCodePane(t *testing.T) {
	m := New(styles.New(false), DefaultKeys)
	if !Hidden(nil) || !Hidden(&snapshot.Snapshot{}) {
		t.Fatal("the pane shows without stack samples")
	}
	s := &snapshot.Snapshot{Code: profile(), Loader: &stage.LoaderStats{Source: "torch", Workers: 1},
		Verdict: &verdict.Verdict{Kind: verdict.InputBound, Stage: stage.DataWait}}
	m.SetSnapshot(s)
	m.SetSize(120, 8)
	view := m.View()
	for _, want := range []string{"90 % under zarr `Array.__getitem__` (innermost zarr `Array._process_chunk`, 90 %), called from `ZDS.__getitem__` at", "dataset.py:41",
		"100 % ZDS.__getitem__  dataset.py:41", "90 %  zarr Array.__getitem__  zarr/core.py:807", "self: 90 % zarr Array._process_chunk"} {
		if !strings.Contains(view, want) {
			t.Errorf("the workers' view lacks %q:\n%s", want, view)
		}
	}
	if title := m.Title(); !strings.Contains(title, "1 workers · 100 samples · follows the verdict") {
		t.Errorf("title %q", title)
	}
	// c visits every group, then follows the verdict again.
	var seen []string
	for range len(s.Code.Groups) + 1 {
		if ok, _ := m.HandleKey(tea.KeyPressMsg{Code: 'c', Text: "c"}); !ok {
			t.Fatal("c is not the pane's key")
		}
		seen = append(seen, m.Title())
	}
	want := []string{"training thread in data_wait", "training thread in forward", "workers", "follows the verdict"}
	for i, w := range want {
		if !strings.Contains(seen[i], w) {
			t.Errorf("after %d presses of c the title is %q, want %q", i+1, seen[i], w)
		}
	}
	if ok, _ := m.HandleKey(tea.KeyPressMsg{Code: 'x', Text: "x"}); ok {
		t.Error("the pane took a key that is not its own")
	}
	if strings.Contains(m.Title(), "dropped") {
		t.Errorf("title %q speaks of drops where there were none", m.Title())
	}
	s.Code.Dropped = 3
	if title := m.Title(); !strings.Contains(title, "· 3 dropped") {
		t.Errorf("title %q does not count the 3 dropped stacks", title)
	}
}

func TestFollowTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verdict *verdict.Verdict
		workers int
		want    string
	}{
		{"input with workers: the workers", &verdict.Verdict{Stage: stage.DataWait}, 2, "worker/"},
		{"input without workers: the training thread in data_wait", &verdict.Verdict{Stage: stage.DataWait}, 0, "train/data_wait"},
		{"another stage: that stage", &verdict.Verdict{Stage: stage.Forward}, 2, "train/forward"},
		{"no stage: the largest group", &verdict.Verdict{}, 2, "worker/"},
		{"no verdict: the largest group", nil, 2, "worker/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Follow(&snapshot.Snapshot{Code: profile(), Verdict: tc.verdict, Loader: &stage.LoaderStats{Workers: tc.workers}})
			if got := g.Role + "/" + g.Stage; got != tc.want {
				t.Errorf("follows %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFollowTheGILThread: on a gil-bound verdict the pane shows the
// Python thread that holds the GIL, its hot path from the user's function.
func TestFollowTheGILThread(t *testing.T) {
	code := profile()
	logger := stage.CodeFrame{Name: "log_metrics", File: "train.py", Line: 33}
	code.Threads = []stage.ThreadProfile{
		{TID: 12, Name: "pin-memory", CPU: 0.3, Free: 0.3, Samples: 40, SampledNs: 4e8},
		{TID: 14, Name: "metrics-logger", CPU: 0.9, Free: 0.05, Samples: 100, SampledNs: 1e9,
			Path: []stage.PathStep{{CodeFrame: stage.CodeFrame{Name: "Thread.run", File: "threading.py", Line: 975, Lib: "threading"}, Share: 1},
				{CodeFrame: logger, Share: 0.97}}},
	}
	m := New(styles.New(false), DefaultKeys)
	m.SetSnapshot(&snapshot.Snapshot{Code: code, Verdict: &verdict.Verdict{Kind: verdict.GILBound}})
	m.SetSize(120, 8)
	if title := m.Title(); !strings.Contains(title, `thread "metrics-logger" (tid 14), holds the GIL 85 % of a core · 100 samples`) {
		t.Errorf("title %q", title)
	}
	if view := m.View(); !strings.Contains(view, "97 % log_metrics  train.py:33") {
		t.Errorf("the thread's view lacks its hot path:\n%s", view)
	}
	m.SetSnapshot(&snapshot.Snapshot{Code: code, Verdict: &verdict.Verdict{Kind: verdict.ComputeBound, Stage: stage.Forward}})
	if title := m.Title(); !strings.Contains(title, "training thread in forward") {
		t.Errorf("another verdict shows %q", title)
	}
}
