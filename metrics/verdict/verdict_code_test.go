package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// The stack fixtures below are those of metrics/stage's profile tests,
// for the verdicts and the hot spot's words that cite them.

// fr is a frame of the user's code; lib one of a library's.
func fr(name, file string, line int) stage.CodeFrame {
	return stage.CodeFrame{Name: name, File: file, Line: line}
}
func lib(pkg, name, file string, line int) stage.CodeFrame {
	return stage.CodeFrame{Name: name, File: file, Line: line, Lib: pkg}
}

// folded builds a stacks frame from rows of (role, stage, stack, samples),
// each sample standing for 10 ms.
type testRow struct {
	role, stage string
	worker      int
	stack       []stage.CodeFrame
	n           int64
}

func samplesOf(t int64, rows ...testRow) *stage.StackSamples {
	s := &stage.StackSamples{TimeNs: t, IntervalNs: 1e9, Hz: 100}
	index := map[stage.CodeFrame]int{}
	for _, r := range rows {
		row := stage.StackRow{Role: r.role, Stage: r.stage, N: r.n, Ns: r.n * 10e6}
		if r.role == stage.RoleWorker {
			w := r.worker
			row.Worker = &w
		}
		for _, f := range r.stack {
			i, ok := index[f]
			if !ok {
				i = len(s.Frames)
				index[f] = i
				s.Frames = append(s.Frames, f)
			}
			row.Stack = append(row.Stack, i)
		}
		s.Rows = append(s.Rows, row)
	}
	return s
}

// The stacks of a Dataset reading single frames of a zarr array.
var (
	workerLoop = []stage.CodeFrame{lib("torch", "_worker_loop", "torch/utils/data/_utils/worker.py", 302),
		lib("torch", "_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py", 58)}
	getitem  = fr("ZDS.__getitem__", "dataset.py", 41)
	zget     = lib("zarr", "Array.__getitem__", "zarr/core.py", 807)
	zchunk   = lib("zarr", "Array._chunk_getitem", "zarr/core.py", 1966)
	zdecode  = lib("zarr", "Array._process_chunk", "zarr/core.py", 1921)
	zread    = lib("zarr", "DirectoryStore._fromfile", "zarr/storage.py", 1080)
	mainLoop = []stage.CodeFrame{fr("<module>", "train.py", 120)}
	logging  = fr("log_metrics", "train.py", 88)
)

func join(parts ...[]stage.CodeFrame) []stage.CodeFrame {
	var out []stage.CodeFrame
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func zarrWorkers(n int64) []testRow {
	return []testRow{
		{stage.RoleWorker, "", 0, join(workerLoop, []stage.CodeFrame{getitem, zget, zchunk, zdecode}), 6 * n},
		{stage.RoleWorker, "", 1, join(workerLoop, []stage.CodeFrame{getitem, zget, zchunk, zread}), 3 * n},
		{stage.RoleWorker, "", 0, join(workerLoop, []stage.CodeFrame{fr("ZDS.__getitem__", "dataset.py", 42)}), n},
	}
}

func TestHotSpot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rows   []testRow
		role   string
		stage  string
		phrase string // "" for no hot spot
		path   int    // hot path length
	}{
		{"a library call under the user's function", zarrWorkers(10), stage.RoleWorker, "",
			"90 % under zarr `Array.__getitem__` (innermost zarr `Array._process_chunk`, 60 %), called from `ZDS.__getitem__` at dataset.py:41", 6},
		{"a user function's own line", []testRow{
			{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{logging}), 90},
			{stage.RoleTrain, stage.Other, -1, mainLoop, 10}}, stage.RoleTrain, stage.Other,
			"90 % in `log_metrics` at train.py:88", 2},
		{"a user function whose time is spread over lines", []testRow{
			{stage.RoleWorker, "", 0, join(workerLoop, []stage.CodeFrame{getitem, fr("heavy", "dataset.py", 10)}), 40},
			{stage.RoleWorker, "", 0, join(workerLoop, []stage.CodeFrame{getitem, fr("heavy", "dataset.py", 11)}), 40},
			{stage.RoleWorker, "", 0, join(workerLoop, []stage.CodeFrame{getitem}), 20}}, stage.RoleWorker, "",
			"80 % in `heavy` (dataset.py)", 4},
		{"the script's top level without a dominant line is not cited", []testRow{
			{stage.RoleTrain, stage.Other, -1, []stage.CodeFrame{fr("<module>", "train.py", 10)}, 40},
			{stage.RoleTrain, stage.Other, -1, []stage.CodeFrame{fr("<module>", "train.py", 11)}, 35},
			{stage.RoleTrain, stage.Other, -1, []stage.CodeFrame{fr("<module>", "train.py", 12)}, 25}}, stage.RoleTrain, stage.Other, "", 1},
		{"spread over functions: nothing dominates", []testRow{
			{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{fr("a", "train.py", 1)}), 30},
			{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{fr("b", "train.py", 2)}), 30},
			{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{fr("c", "train.py", 3)}), 40}}, stage.RoleTrain, stage.Other,
			"100 % in `<module>` at train.py:120", 1},
		{"only libraries on the path", []testRow{
			{stage.RoleTrain, stage.DataWait, -1, workerLoop, 50}}, stage.RoleTrain, stage.DataWait, "", 2},
		{"too few samples", zarrWorkers(1), stage.RoleWorker, "", "", 6},
		{"a comprehension is cited by the function it is written in", []testRow{
			{stage.RoleWorker, "", 0, join(workerLoop, []stage.CodeFrame{fr("ZDS.__getitem__", "dataset.py", 40), fr("ZDS.__getitem__.<locals>.<listcomp>", "dataset.py", 41), zget}), 30}},
			stage.RoleWorker, "", "100 % under zarr `Array.__getitem__`, called from `ZDS.__getitem__` at dataset.py:41", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stage.ProfileOf(samplesOf(1e18, tc.rows...))
			g := p.Group(tc.role, tc.stage)
			if g == nil {
				t.Fatalf("no group %s/%s in %+v", tc.role, tc.stage, p)
			}
			if len(g.Path) != tc.path {
				t.Errorf("hot path of %d calls, want %d: %+v", len(g.Path), tc.path, g.Path)
			}
			got := ""
			if g.Hot != nil {
				got = Phrase(g.Hot)
			}
			if got != tc.phrase {
				t.Errorf("hot spot %q, want %q", got, tc.phrase)
			}
		})
	}
}

func TestCodeVerdicts(t *testing.T) {
	const start = int64(1e18)
	// Two saturated workers delivering in turn: every 2nd step waits.
	inTurn := run(start, 200, func(i int) map[string]int64 {
		m := map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 2 * ms1, stage.Backward: ms1, stage.Optim: ms1 / 2}
		if i%2 == 1 {
			m[stage.DataWait] = 40 * ms1
		}
		return m
	}).Summarize(0)
	periodic := run(start, 200, periodicTimes(20, 250*ms1)).Summarize(0)
	// The in-turn waits of a loaded machine: 30 % of the steps wait, at
	// no period (TestRunNamesHotCode in a make test run).
	blurred := run(start, 200, func(i int) map[string]int64 {
		m := map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 2 * ms1, stage.Backward: ms1, stage.Optim: ms1 / 2}
		if i%10 == 1 || i%10 == 4 || i%10 == 8 {
			m[stage.DataWait] = 40 * ms1
		}
		return m
	}).Summarize(0)
	// A loader-alone phase: every step only waits, every 2nd long.
	loaderAlone := run(start, 200, func(i int) map[string]int64 {
		if i%2 == 1 {
			return map[string]int64{stage.DataWait: 60 * ms1}
		}
		return map[string]int64{stage.DataWait: 4 * ms1}
	}).Summarize(0)
	// Two workers, one busy all the time and one a quarter of it (the
	// bisect's input case): 40 batches/s.
	unbalanced := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.63, WorkerBusyEach: []float64{0.99, 0.26}, BatchesPerSec: 40, Prefetch: 2, Cores: 2}
	steady := run(start, 200, steadyTimes(20*ms1)).Summarize(0)
	untimedRun := run(start, 200, func(int) map[string]int64 {
		return map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 4 * ms1, stage.Backward: 3 * ms1, stage.Other: 5 * ms1}
	}).Summarize(0)
	busy := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 1, WorkerBusyEach: []float64{1, 1}, Prefetch: 2, Cores: 2}
	idle := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.3, Prefetch: 2, Cores: 2}
	// Workers busy 80 % that deliver 42 batches/s: at most 53/s kept busy,
	// while the loop would take 280/s (CI saw this with 2 workers on h5py).
	slow := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.8, BatchesPerSec: 42, Prefetch: 2, Cores: 2}
	// One slow batch in 20 that keeps one of 2 workers busy 95 %: 3.2
	// batches/s delivered, 3.4 kept busy, where the loop takes 100.
	slowOne := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.5, WorkerBusyEach: []float64{0.95, 0.05}, BatchesPerSec: 3.2, Prefetch: 2, Cores: 2}
	// The same delivery from workers busy 10 %: 420/s kept busy, enough.
	fast := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.1, BatchesPerSec: 42, Prefetch: 2, Cores: 2}
	amped := func(a stage.ZarrArray, busyness float64) *stage.LoaderStats {
		l := *busy
		l.WorkerBusy = busyness
		l.Zarr = []stage.ZarrArray{{Store: "/data/run.zarr", Path: "data/camera0", Shape: []int{4000, 32, 32, 3}, Chunks: []int{500, 16, 16, 3},
			DType: "uint8", ItemSize: 1, ZarrFormat: 2, ReplayBuffer: true, Calls: 1000, BytesReturned: 1000 * 3072, BytesDecoded: 1000 * 3072 * 500, ReadAmp: 500}}
		if a.Shape != nil {
			l.Zarr[0] = a
		}
		return &l
	}
	workersCode := stage.ProfileOf(samplesOf(start, zarrWorkers(10)...))
	otherCode := stage.ProfileOf(samplesOf(start, testRow{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{logging}), 90},
		testRow{stage.RoleTrain, stage.Other, -1, mainLoop, 10}))
	for _, tc := range []struct {
		name     string
		in       Inputs
		want     Kind
		contains []string
		lacks    []string
	}{
		{"saturated workers in turn are input-bound", Inputs{Summary: inTurn, Loader: busy}, InputBound,
			[]string{"the 2 workers, busy 100 %, hand over their batches in turn (every 2nd step waits)", "raise num_workers"}, []string{"prefetch"}},
		{"the same waits with idle workers are stalls", Inputs{Summary: inTurn, Loader: idle}, InputStalls,
			[]string{"every 2nd step waits", "prefetch"}, nil},
		{"unsaturated workers slower than the loop are input-bound", Inputs{Summary: inTurn, Loader: slow}, InputBound,
			[]string{"the 2 workers, busy 80 %, hand over their batches in turn (every 2nd step waits)"}, []string{"keeps up on average"}},
		{"workers that could keep up stall", Inputs{Summary: inTurn, Loader: fast}, InputStalls,
			[]string{"every 2nd step waits", "keeps up on average"}, nil},
		{"a loader alone whose busiest worker never rests is input-bound", Inputs{Summary: loaderAlone, Loader: unbalanced}, InputBound,
			[]string{"the 2 workers, busy 63 %, hand over their batches in turn (every 2nd step waits)"}, []string{"keeps up on average"}},
		{"aperiodic waits from a loader slow on average are input-bound", Inputs{Summary: blurred, Loader: slow}, InputBound,
			[]string{"the 2 workers, busy 80 %, hand over their batches in turn", "of steps wait"}, []string{"deepen the prefetch", "cannot hide"}},
		{"a real periodic stall stays a stall", Inputs{Summary: periodic, Loader: idle}, InputStalls,
			[]string{"every 20th step waits 250 ms", "deepen the prefetch"}, nil},
		{"a periodic stall too slow to hide: no prefetch advice", Inputs{Summary: periodic, Loader: slowOne}, InputStalls,
			[]string{"every 20th step waits 250 ms", "find what recurs every 20 steps", "the slow batches cost more than the workers can hide (kept busy, they would deliver",
				"deeper prefetch alone cannot help"}, []string{"deepen the prefetch", "keeps up on average"}},
		{"amplified zarr: rechunk before workers", Inputs{Summary: steady, Loader: amped(stage.ZarrArray{}, 1), Code: workersCode}, InputBound,
			[]string{"workers spend 90 % under zarr `Array.__getitem__`", "called from `ZDS.__getitem__` at dataset.py:41",
				"data/camera0 decodes 500x the bytes it returns (1 frame per read of a (500, 16, 16, 3) chunk)",
				"`pipetrain data inspect /data/run.zarr`, then `pipetrain data rechunk /data/run.zarr /data/run-rechunked.zarr --chunk-frames 1`",
				"then, if the workers still cannot keep up, 2 workers are busy 100 %"}, nil},
		{"amplified zarr with idle workers: no worker advice", Inputs{Summary: steady, Loader: amped(stage.ZarrArray{}, 0.5)}, InputBound,
			[]string{"rechunk it to 1-frame chunks"}, []string{"num_workers", "prefetch_factor"}},
		{"a store that is not a replay buffer: no inspect", Inputs{Summary: steady, Loader: amped(stage.ZarrArray{Store: "/d/x.zarr", Path: "imgs",
			Shape: []int{100, 8, 8}, Chunks: []int{100, 8, 8}, ItemSize: 4, Calls: 10, BytesReturned: 2560, BytesDecoded: 256000, ReadAmp: 100}, 1)}, InputBound,
			[]string{"`pipetrain data rechunk /d/x.zarr /d/x-rechunked.zarr --chunk-frames 1`"}, []string{"inspect"}},
		{"an array at the store's root", Inputs{Summary: steady, Loader: amped(stage.ZarrArray{Store: "/d/x.zarr", Shape: []int{100, 8, 8},
			Chunks: []int{50, 8, 8}, ItemSize: 1, Calls: 10, BytesReturned: 640, BytesDecoded: 32000, ReadAmp: 50}, 1)}, InputBound,
			[]string{"store it in 1-frame chunks (chunks=(1, 8, 8))"}, []string{"pipetrain"}},
		{"a vector array: read it whole", Inputs{Summary: steady, Loader: amped(stage.ZarrArray{Store: "/d/x.zarr", Path: "state", Shape: []int{30000, 14},
			Chunks: []int{15000, 7}, ItemSize: 4, Calls: 10, BytesReturned: 560, BytesDecoded: 8400000, ReadAmp: 15000}, 1)}, InputBound,
			[]string{"it is 1.6 MiB: read it whole into memory once"}, []string{"pipetrain"}},
		{"1-frame chunks: no rechunk advice", Inputs{Summary: steady, Loader: amped(stage.ZarrArray{Store: "/d/x.zarr", Path: "imgs", Shape: []int{100, 8, 8},
			Chunks: []int{1, 8, 8}, ItemSize: 1, Calls: 10, BytesReturned: 640, BytesDecoded: 640, ReadAmp: 1}, 1)}, InputBound,
			[]string{"raise num_workers"}, []string{"rechunk"}},
		{"untimed work names the function", Inputs{Summary: untimedRun, Code: otherCode}, Untimed,
			[]string{"41 % of each step", "90 % of it in `log_metrics` at train.py:88", "make `log_metrics` at train.py:88 cheaper"}, []string{"wrap"}},
		{"untimed without samples", Inputs{Summary: untimedRun}, Untimed, []string{"wrap the missing work"}, nil},
		{"the workers' code is not cited for a healthy run", Inputs{Summary: run(start, 100, steadyTimes(ms1/2)).Summarize(0), Loader: busy, Code: workersCode},
			ComputeBound, []string{"input keeps up"}, []string{"zarr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.in)
			if v.Kind != tc.want {
				t.Fatalf("got %s (%s), want %s", v.Kind, v, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			for _, c := range tc.lacks {
				if strings.Contains(v.String(), c) {
					t.Errorf("verdict %q has %q", v, c)
				}
			}
		})
	}
}
