package stacks

import (
	"reflect"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/pystack"
	"github.com/pipetop/pipetop/metrics/stage"
)

func TestFiles(t *testing.T) {
	f := newFiles("/home/u/proj")
	for _, c := range []struct {
		in   string
		want where
	}{
		{"/home/u/proj/train.py", where{file: "train.py"}},
		{"/home/u/proj/lib/aug.py", where{file: "lib/aug.py"}},
		{"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", where{file: "torch/utils/data/dataloader.py", lib: "torch"}},
		{"/venv/lib/python3.12/site-packages/zarr/core.py", where{file: "zarr/core.py", lib: "zarr"}},
		{"/usr/lib/python3.11/threading.py", where{file: "threading.py", lib: "threading"}},
		{"/root/.pyenv/versions/3.12.1/lib/python3.12/json/decoder.py", where{file: "json/decoder.py", lib: "json"}},
		{"<frozen importlib._bootstrap>", where{file: "<frozen importlib._bootstrap>", lib: "importlib"}},
		{"<string>", where{file: "<string>"}},
		{"/tmp/cache/python/81c4/pipetop_publish/auto.py", where{skip: true}},
		{"/elsewhere/x.py", where{file: "/elsewhere/x.py"}},
		{"/usr/lib/python3", where{file: "/usr/lib/python3"}},
	} {
		if got := f.describe(c.in); got != c.want {
			t.Errorf("describe(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// TestFold: rows per role, worker and stage, innermost frames read first
// and stored outermost first, a worker's stack cut at torch's worker loop,
// pipetop's own frames left out; other threads with the GIL share their
// samples found.
func TestFold(t *testing.T) {
	fo := newFold(newFiles("/p"))
	train := []pystack.Frame{{Name: "hot", File: "/p/t.py", Line: 3}, {Name: "wrapper", File: "/c/pipetop_publish/auto.py", Line: 1}, {Name: "<module>", File: "/p/t.py", Line: 9}}
	worker := []pystack.Frame{{Name: "load", File: "/p/t.py", Line: 5}, {Name: workerLoop, File: "/usr/lib/python3/dist-packages/" + workerLoopFile, Line: 300},
		{Name: "DataLoader.__iter__", File: "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", Line: 40}}
	fo.add(stage.RoleTrain, -1, "forward", train, 10)
	fo.add(stage.RoleTrain, -1, "forward", train, 20)
	fo.add(stage.RoleTrain, -1, "backward", train, 5)
	fo.add(stage.RoleWorker, 1, stage.SlowFetch, worker, 7)
	fo.add(stage.RoleTrain, -1, "forward", nil, 99) // no Python frame: no sample
	fo.other(&pystack.Thread{TID: 9, Name: "logger", HoldsGIL: true, Frames: train[:1]}, 30)
	fo.other(&pystack.Thread{TID: 9, Name: "renamed", Frames: train[:1]}, 10)
	fo.dropped = 2 // two stacks whose reads raced the interpreter (Sampler.drop)
	s := fo.take(time.Unix(5, 0), time.Second, 100, func(tid int) (int64, int64, bool) { return 600, int64(time.Second), tid == 9 })
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	name := func(stack []int) (out []string) {
		for _, i := range stack {
			out = append(out, s.Frames[i].Name)
		}
		return out
	}
	if s.Dropped != 2 {
		t.Errorf("dropped %d, want 2", s.Dropped)
	}
	if len(s.Rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(s.Rows), s.Rows)
	}
	r := s.Rows[0]
	if r.Role != stage.RoleTrain || r.Stage != "forward" || r.N != 2 || r.Ns != 30 || !reflect.DeepEqual(name(r.Stack), []string{"<module>", "hot"}) {
		t.Errorf("row 0 %+v (%v)", r, name(r.Stack))
	}
	w := s.Rows[2]
	if w.Role != stage.RoleWorker || w.Worker == nil || *w.Worker != 1 || w.Stage != stage.SlowFetch || !reflect.DeepEqual(name(w.Stack), []string{workerLoop, "load"}) {
		t.Errorf("worker row %+v (%v)", w, name(w.Stack))
	}
	if len(s.Threads) != 1 {
		t.Fatalf("threads %+v", s.Threads)
	}
	th := s.Threads[0]
	if th.Name != "renamed" {
		t.Errorf("thread named %q, want its latest name", th.Name)
	}
	// CPU 600 of 1000 ns, held the GIL in 30 of 40 ns of samples: free 0.6-0.75 < 0.
	if th.N != 2 || th.Probes != 2 || th.ProbedNs != 40 || th.CPUNs != 600 || th.CoveredNs != int64(time.Second) || th.FreeNs != 0 || len(th.Rows) != 1 {
		t.Errorf("thread %+v", th)
	}
	if again := fo.take(time.Unix(6, 0), time.Second, 100, func(int) (int64, int64, bool) { return 0, 0, false }); again != nil {
		t.Errorf("a second take without samples = %+v, want nil", again)
	}
	fo.dropped = 1
	if only := fo.take(time.Unix(7, 0), time.Second, 100, func(int) (int64, int64, bool) { return 0, 0, false }); only == nil || only.Dropped != 1 || only.Validate() != nil {
		t.Errorf("a take of drops alone = %+v, want a frame that counts the drop", only)
	}
}

func TestFree(t *testing.T) {
	for _, c := range []struct{ cpu, covered, held, probed, want int64 }{
		{500, 1000, 0, 100, 50},  // half a core, never held the GIL: all of it free
		{500, 1000, 50, 100, 0},  // half a core, held it half the samples
		{800, 1000, 20, 100, 60}, // 0.8 - 0.2
		{100, 1000, 100, 100, 0}, // never negative
		{100, 0, 0, 100, 0},      // no CPU reading
		{100, 1000, 0, 0, 0},     // no samples
	} {
		if got := free(c.cpu, c.covered, c.held, c.probed); got != c.want {
			t.Errorf("free(%d, %d, %d, %d) = %d, want %d", c.cpu, c.covered, c.held, c.probed, got, c.want)
		}
	}
}

func TestPlainName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/usr/bin/python3\x00train.py\x00--lr\x001\x00", "train"},
		{"python3\x00-u\x00/a/b/spin.py\x00", "spin"},
		{"/usr/bin/python3.11\x00-c\x00pass\x00", "python3.11"},
		{"", "python"},
		{"\x00\x00.py", "python"},
	} {
		if got := plainName([]byte(c.in)); got != c.want {
			t.Errorf("plainName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStatField(t *testing.T) {
	line := []byte("42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 17 0 0 20 0 3 0 98765 1000 200")
	for _, c := range []struct {
		n    int
		want int64
		ok   bool
	}{{4, 1, true}, {14, 250, true}, {15, 17, true}, {22, 98765, true}, {3, 0, false}, {2, 0, false}, {40, 0, false}} {
		if got, ok := statField(line, c.n); got != c.want || ok != c.ok {
			t.Errorf("statField(%d) = %d, %v; want %d, %v", c.n, got, ok, c.want, c.ok)
		}
	}
}

// FuzzStatField: any /proc stat line, no panic.
func FuzzStatField(f *testing.F) {
	f.Add([]byte("42 (python3) S 1 42 42 0 -1 4194560 100 0 0 0 250 17 0 0 20 0 3 0 98765"), 22)
	f.Add([]byte(")"), 14)
	f.Add([]byte("1 ((( ) R"), 3)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		statField(b, n%64)
	})
}

// FuzzPlainName: any command line, no panic, never empty.
func FuzzPlainName(f *testing.F) {
	f.Add([]byte("/usr/bin/python3\x00train.py\x00"))
	f.Add([]byte("\x00\x00.py"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if plainName(b) == "" {
			t.Errorf("plainName(%q) is empty", b)
		}
	})
}
