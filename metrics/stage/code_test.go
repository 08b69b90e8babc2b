package stage

import (
	"encoding/json"
	"strings"
	"testing"
)

// fr is a frame of the user's code; lib one of a library's.
func fr(name, file string, line int) CodeFrame { return CodeFrame{Name: name, File: file, Line: line} }
func lib(pkg, name, file string, line int) CodeFrame {
	return CodeFrame{Name: name, File: file, Line: line, Lib: pkg}
}

// folded builds a stacks frame from rows of (role, stage, stack, samples),
// each sample standing for 10 ms.
type testRow struct {
	role, stage string
	worker      int
	stack       []CodeFrame
	n           int64
}

func samplesOf(t int64, rows ...testRow) *StackSamples {
	s := &StackSamples{TimeNs: t, IntervalNs: 1e9, Hz: 100}
	index := map[CodeFrame]int{}
	for _, r := range rows {
		row := StackRow{Role: r.role, Stage: r.stage, N: r.n, Ns: r.n * 10e6}
		if r.role == RoleWorker {
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
	workerLoop = []CodeFrame{lib("torch", "_worker_loop", "torch/utils/data/_utils/worker.py", 302),
		lib("torch", "_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py", 58)}
	getitem  = fr("ZDS.__getitem__", "dataset.py", 41)
	zget     = lib("zarr", "Array.__getitem__", "zarr/core.py", 807)
	zchunk   = lib("zarr", "Array._chunk_getitem", "zarr/core.py", 1966)
	zdecode  = lib("zarr", "Array._process_chunk", "zarr/core.py", 1921)
	zread    = lib("zarr", "DirectoryStore._fromfile", "zarr/storage.py", 1080)
	mainLoop = []CodeFrame{fr("<module>", "train.py", 120)}
	logging  = fr("log_metrics", "train.py", 88)
)

func join(parts ...[]CodeFrame) []CodeFrame {
	var out []CodeFrame
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func zarrWorkers(n int64) []testRow {
	return []testRow{
		{RoleWorker, "", 0, join(workerLoop, []CodeFrame{getitem, zget, zchunk, zdecode}), 6 * n},
		{RoleWorker, "", 1, join(workerLoop, []CodeFrame{getitem, zget, zchunk, zread}), 3 * n},
		{RoleWorker, "", 0, join(workerLoop, []CodeFrame{fr("ZDS.__getitem__", "dataset.py", 42)}), n},
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
		{"a library call under the user's function", zarrWorkers(10), RoleWorker, "",
			"90 % under zarr `Array.__getitem__` (innermost zarr `Array._process_chunk`, 60 %), called from `ZDS.__getitem__` at dataset.py:41", 6},
		{"a user function's own line", []testRow{
			{RoleTrain, Other, -1, join(mainLoop, []CodeFrame{logging}), 90},
			{RoleTrain, Other, -1, mainLoop, 10}}, RoleTrain, Other,
			"90 % in `log_metrics` at train.py:88", 2},
		{"a user function whose time is spread over lines", []testRow{
			{RoleWorker, "", 0, join(workerLoop, []CodeFrame{getitem, fr("heavy", "dataset.py", 10)}), 40},
			{RoleWorker, "", 0, join(workerLoop, []CodeFrame{getitem, fr("heavy", "dataset.py", 11)}), 40},
			{RoleWorker, "", 0, join(workerLoop, []CodeFrame{getitem}), 20}}, RoleWorker, "",
			"80 % in `heavy` (dataset.py)", 4},
		{"the script's top level without a dominant line is not cited", []testRow{
			{RoleTrain, Other, -1, []CodeFrame{fr("<module>", "train.py", 10)}, 40},
			{RoleTrain, Other, -1, []CodeFrame{fr("<module>", "train.py", 11)}, 35},
			{RoleTrain, Other, -1, []CodeFrame{fr("<module>", "train.py", 12)}, 25}}, RoleTrain, Other, "", 1},
		{"spread over functions: nothing dominates", []testRow{
			{RoleTrain, Other, -1, join(mainLoop, []CodeFrame{fr("a", "train.py", 1)}), 30},
			{RoleTrain, Other, -1, join(mainLoop, []CodeFrame{fr("b", "train.py", 2)}), 30},
			{RoleTrain, Other, -1, join(mainLoop, []CodeFrame{fr("c", "train.py", 3)}), 40}}, RoleTrain, Other,
			"100 % in `<module>` at train.py:120", 1},
		{"only libraries on the path", []testRow{
			{RoleTrain, DataWait, -1, workerLoop, 50}}, RoleTrain, DataWait, "", 2},
		{"too few samples", zarrWorkers(1), RoleWorker, "", "", 6},
		{"a comprehension is cited by the function it is written in", []testRow{
			{RoleWorker, "", 0, join(workerLoop, []CodeFrame{fr("ZDS.__getitem__", "dataset.py", 40), fr("ZDS.__getitem__.<locals>.<listcomp>", "dataset.py", 41), zget}), 30}},
			RoleWorker, "", "100 % under zarr `Array.__getitem__`, called from `ZDS.__getitem__` at dataset.py:41", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ProfileOf(samplesOf(1e18, tc.rows...))
			g := p.Group(tc.role, tc.stage)
			if g == nil {
				t.Fatalf("no group %s/%s in %+v", tc.role, tc.stage, p)
			}
			if len(g.Path) != tc.path {
				t.Errorf("hot path of %d calls, want %d: %+v", len(g.Path), tc.path, g.Path)
			}
			got := ""
			if g.Hot != nil {
				got = g.Hot.Phrase()
			}
			if got != tc.phrase {
				t.Errorf("hot spot %q, want %q", got, tc.phrase)
			}
		})
	}
}

func TestProfileGroupsAndCounts(t *testing.T) {
	rows := append(zarrWorkers(10), testRow{RoleTrain, DataWait, -1, mainLoop, 70}, testRow{RoleTrain, Forward, -1, mainLoop, 30})
	p := ProfileOf(samplesOf(1e18, rows...))
	if p.Samples != 200 || p.SampledNs != 200*10e6 || p.Hz != 100 {
		t.Fatalf("profile counts %d samples, %d ns at %v Hz; want 200, 2e9, 100", p.Samples, p.SampledNs, p.Hz)
	}
	var order []string
	for _, g := range p.Groups {
		order = append(order, g.Role+"/"+g.Stage)
	}
	if strings.Join(order, " ") != "train/data_wait train/forward worker/" {
		t.Errorf("groups %v: want the training thread's by time, then the workers", order)
	}
	w := p.Group(RoleWorker, "")
	if w.Workers != 2 || w.Samples != 100 {
		t.Errorf("workers group: %d workers, %d samples; want 2, 100", w.Workers, w.Samples)
	}
	if len(w.Top) == 0 || w.Top[0].Name != "Array._process_chunk" || w.Top[0].Self != 0.6 || w.Top[0].Total != 0.6 {
		t.Errorf("top self function %+v, want Array._process_chunk at 60 %%", w.Top)
	}
	if len(w.Stacks) != 3 || !strings.HasSuffix(w.Stacks[0].Stack, "Array._process_chunk (zarr/core.py:1921)") || w.Stacks[0].Samples != 60 {
		t.Errorf("folded stacks %+v", w.Stacks)
	}
}

func TestCodeRingWindows(t *testing.T) {
	c := NewCodeRing(3)
	for i := int64(0); i < 5; i++ {
		c.Add(samplesOf(1e18+i*1e9, testRow{RoleTrain, Other, -1, []CodeFrame{fr("f", "a.py", int(i))}, 10}))
	}
	if c.Len() != 3 {
		t.Fatalf("ring holds %d frames, want its 3", c.Len())
	}
	if p := c.Profile(1e18+3e9, 1e18+4e9); p == nil || p.Samples != 20 {
		t.Errorf("the last 2 s: %+v, want 20 samples", p)
	}
	if p := c.Profile(0, 1e18); p != nil {
		t.Errorf("before the ring: %+v, want none", p)
	}
	// Re-interning keeps every stack what it was.
	before := c.Profile(0, 2e18)
	c.compact()
	after := c.Profile(0, 2e18)
	if before.Groups[0].Stacks[0] != after.Groups[0].Stacks[0] || len(after.Groups[0].Stacks) != 3 {
		t.Errorf("compact changed the stacks: %+v -> %+v", before.Groups[0].Stacks, after.Groups[0].Stacks)
	}
}

func TestStackSamplesValidate(t *testing.T) {
	good := func() *StackSamples { return samplesOf(1, zarrWorkers(1)...) }
	neg := -1
	for _, tc := range []struct {
		name string
		bad  func(s *StackSamples)
		want string
	}{
		{"index out of range", func(s *StackSamples) { s.Rows[0].Stack[0] = len(s.Frames) }, "out of range"},
		{"negative index", func(s *StackSamples) { s.Rows[0].Stack[0] = -1 }, "out of range"},
		{"no role", func(s *StackSamples) { s.Rows[0].Role = "" }, "role"},
		{"negative worker", func(s *StackSamples) { s.Rows[0].Worker = &neg }, "worker -1"},
		{"negative count", func(s *StackSamples) { s.Rows[0].N = -1 }, "negative count"},
		{"too deep", func(s *StackSamples) { s.Rows[0].Stack = make([]int, MaxStackDepth+1) }, "deep"},
		{"a long name", func(s *StackSamples) { s.Frames[0].Name = strings.Repeat("x", MaxCodeText+1) }, "over 1024 bytes"},
		{"negative line", func(s *StackSamples) { s.Frames[0].Line = -3 }, "line -3"},
		{"negative time", func(s *StackSamples) { s.TimeNs = -1 }, "negative"},
		{"too many rows", func(s *StackSamples) { s.Rows = make([]StackRow, MaxStackRows+1) }, "rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			if err := s.Validate(); err != nil {
				t.Fatalf("the good frame: %v", err)
			}
			tc.bad(s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, tc.want)
			}
		})
	}
	var none *StackSamples
	if err := none.Validate(); err == nil {
		t.Error("a stacks frame without stacks validated")
	}
}

func TestCodeVerdicts(t *testing.T) {
	const start = int64(1e18)
	// Two saturated workers delivering in turn: every 2nd step waits.
	inTurn := run(start, 200, func(i int) map[string]int64 {
		m := map[string]int64{DataWait: ms1 / 10, Forward: 2 * ms1, Backward: ms1, Optim: ms1 / 2}
		if i%2 == 1 {
			m[DataWait] = 40 * ms1
		}
		return m
	}).Summarize(0)
	periodic := run(start, 200, periodicTimes(20, 250*ms1)).Summarize(0)
	steady := run(start, 200, steadyTimes(20*ms1)).Summarize(0)
	untimedRun := run(start, 200, func(int) map[string]int64 {
		return map[string]int64{DataWait: ms1 / 10, Forward: 4 * ms1, Backward: 3 * ms1, Other: 5 * ms1}
	}).Summarize(0)
	busy := &LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 1, WorkerBusyEach: []float64{1, 1}, Prefetch: 2, Cores: 2}
	idle := &LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.3, Prefetch: 2, Cores: 2}
	amped := func(a ZarrArray, busyness float64) *LoaderStats {
		l := *busy
		l.WorkerBusy = busyness
		l.Zarr = []ZarrArray{{Store: "/data/run.zarr", Path: "data/camera0", Shape: []int{4000, 32, 32, 3}, Chunks: []int{500, 16, 16, 3},
			DType: "uint8", ItemSize: 1, ZarrFormat: 2, ReplayBuffer: true, Calls: 1000, BytesReturned: 1000 * 3072, BytesDecoded: 1000 * 3072 * 500, ReadAmp: 500}}
		if a.Shape != nil {
			l.Zarr[0] = a
		}
		return &l
	}
	workersCode := ProfileOf(samplesOf(start, zarrWorkers(10)...))
	otherCode := ProfileOf(samplesOf(start, testRow{RoleTrain, Other, -1, join(mainLoop, []CodeFrame{logging}), 90},
		testRow{RoleTrain, Other, -1, mainLoop, 10}))
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
		{"a real periodic stall stays a stall", Inputs{Summary: periodic, Loader: idle}, InputStalls,
			[]string{"every 20th step waits 250 ms", "deepen the prefetch"}, nil},
		{"amplified zarr: rechunk before workers", Inputs{Summary: steady, Loader: amped(ZarrArray{}, 1), Code: workersCode}, InputBound,
			[]string{"workers spend 90 % under zarr `Array.__getitem__`", "called from `ZDS.__getitem__` at dataset.py:41",
				"data/camera0 decodes 500x the bytes it returns (1 frame per read of a (500, 16, 16, 3) chunk)",
				"`pipetrain data inspect /data/run.zarr`, then `pipetrain data rechunk /data/run.zarr /data/run-rechunked.zarr --chunk-frames 1`",
				"then, if the workers still cannot keep up, 2 workers are busy 100 %"}, nil},
		{"amplified zarr with idle workers: no worker advice", Inputs{Summary: steady, Loader: amped(ZarrArray{}, 0.5)}, InputBound,
			[]string{"rechunk it to 1-frame chunks"}, []string{"num_workers", "prefetch_factor"}},
		{"a store that is not a replay buffer: no inspect", Inputs{Summary: steady, Loader: amped(ZarrArray{Store: "/d/x.zarr", Path: "imgs",
			Shape: []int{100, 8, 8}, Chunks: []int{100, 8, 8}, ItemSize: 4, Calls: 10, BytesReturned: 2560, BytesDecoded: 256000, ReadAmp: 100}, 1)}, InputBound,
			[]string{"`pipetrain data rechunk /d/x.zarr /d/x-rechunked.zarr --chunk-frames 1`"}, []string{"inspect"}},
		{"an array at the store's root", Inputs{Summary: steady, Loader: amped(ZarrArray{Store: "/d/x.zarr", Shape: []int{100, 8, 8},
			Chunks: []int{50, 8, 8}, ItemSize: 1, Calls: 10, BytesReturned: 640, BytesDecoded: 32000, ReadAmp: 50}, 1)}, InputBound,
			[]string{"store it in 1-frame chunks (chunks=(1, 8, 8))"}, []string{"pipetrain"}},
		{"a vector array: read it whole", Inputs{Summary: steady, Loader: amped(ZarrArray{Store: "/d/x.zarr", Path: "state", Shape: []int{30000, 14},
			Chunks: []int{15000, 7}, ItemSize: 4, Calls: 10, BytesReturned: 560, BytesDecoded: 8400000, ReadAmp: 15000}, 1)}, InputBound,
			[]string{"it is 1.6 MiB: read it whole into memory once"}, []string{"pipetrain"}},
		{"1-frame chunks: no rechunk advice", Inputs{Summary: steady, Loader: amped(ZarrArray{Store: "/d/x.zarr", Path: "imgs", Shape: []int{100, 8, 8},
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

// FuzzCodeProfile profiles any stacks frame that validates: no panic, and
// the profile's samples are the frame's.
func FuzzCodeProfile(f *testing.F) {
	f.Add([]byte(`{"t":1,"hz":100,"frames":[{"name":"f","file":"a.py","line":3},{"name":"g","file":"z/c.py","line":9,"lib":"z"}],` +
		`"rows":[{"role":"train","stage":"other","stack":[0,1],"n":4,"ns":40},{"role":"worker","worker":1,"stack":[1,1,0],"n":30,"ns":9},{"role":"x","stack":[],"n":1,"ns":1}]}`))
	f.Add([]byte(`{"frames":[{"name":"<module>","file":"t.py","line":1}],"rows":[{"role":"train","stage":"other","stack":[0],"n":25,"ns":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s StackSamples
		if json.Unmarshal(data, &s) != nil || s.Validate() != nil {
			return
		}
		n, ns := s.Samples()
		p := ProfileOf(&s)
		if p == nil {
			if n != 0 || ns != 0 {
				t.Fatalf("no profile of %d samples", n)
			}
			return
		}
		if p.Samples != n || p.SampledNs != ns {
			t.Fatalf("profile of %d samples (%d ns), the frame has %d (%d ns)", p.Samples, p.SampledNs, n, ns)
		}
		for _, g := range p.Groups {
			for _, st := range g.Path {
				if st.Share < HotShare-1e-9 || st.Share > 1+1e-9 {
					t.Fatalf("hot path step with share %v", st.Share)
				}
			}
		}
	})
}

// BenchmarkProfile profiles two minutes of stacks frames (one a second,
// 300 distinct stacks each): what a refresh with the 2m window costs when
// a frame came.
func BenchmarkProfile(b *testing.B) {
	c := NewCodeRing(0)
	for i := range int64(120) {
		var rows []testRow
		for j := range 300 {
			rows = append(rows, testRow{RoleWorker, "", j % 4, join(workerLoop, []CodeFrame{getitem, fr("f", "dataset.py", j), zget, zchunk}), 3})
		}
		c.Add(samplesOf(1e18+i*1e9, rows...))
	}
	b.ResetTimer()
	for b.Loop() {
		if p := c.Profile(0, 2e18); p == nil {
			b.Fatal("no profile")
		}
	}
}
