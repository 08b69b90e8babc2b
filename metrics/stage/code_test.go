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

// TestSlowFetches: a worker's samples in its slow fetches count with all
// the workers' and apart, and the profile's totals count them once.
func TestSlowFetches(t *testing.T) {
	openShard := fr("open_shard", "train.py", 37)
	rows := append(zarrWorkers(10), testRow{RoleWorker, SlowFetch, 0, join(workerLoop, []CodeFrame{getitem, openShard}), 50})
	p := ProfileOf(samplesOf(1e18, rows...))
	if p.Samples != 150 {
		t.Errorf("profile counts %d samples, want 150", p.Samples)
	}
	all, slow := p.Group(RoleWorker, ""), p.Group(RoleWorker, SlowFetch)
	if all == nil || slow == nil || all.Samples != 150 || slow.Samples != 50 || slow.Workers != 1 {
		t.Fatalf("workers %+v, slow fetches %+v: want 150 and 50 samples (one worker)", all, slow)
	}
	if slow.Hot == nil || slow.Hot.User.Name != "open_shard" || slow.Hot.Share != 1 {
		t.Errorf("slow fetches' hot spot %+v, want open_shard at 100 %%", slow.Hot)
	}
	if all.Who() != "workers" || slow.Who() != "workers in slow fetches" {
		t.Errorf("names %q and %q", all.Who(), slow.Who())
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
