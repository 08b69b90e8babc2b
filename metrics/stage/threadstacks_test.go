package stage

import (
	"encoding/json"
	"strings"
	"testing"
)

// withThread adds a thread to s with one stack of n samples (10 ms each),
// cpu and free its shares of a core, probes probes of 300 µs.
func withThread(s *StackSamples, tid int, name string, cpu, free float64, probes int64, stack []CodeFrame, n int64) {
	th := ThreadSamples{TID: tid, Name: name, N: n, CoveredNs: n * 10e6, CPUNs: int64(cpu * float64(n) * 10e6),
		Probes: probes, ProbedNs: probes * 300e3, FreeNs: int64(free * float64(probes) * 300e3)}
	row := ThreadRow{N: n, Ns: n * 10e6}
	for _, f := range stack {
		row.Stack = append(row.Stack, len(s.Frames))
		s.Frames = append(s.Frames, f)
	}
	th.Rows = append(th.Rows, row)
	s.Threads = append(s.Threads, th)
}

var (
	spinStack = []CodeFrame{lib("threading", "Thread._bootstrap", "threading.py", 995),
		lib("threading", "Thread.run", "threading.py", 975), fr("log_metrics", "train_gil.py", 31)}
	mmStack = []CodeFrame{lib("threading", "Thread._bootstrap", "threading.py", 995),
		lib("threading", "Thread.run", "threading.py", 975), fr("precompute", "train_gil.py", 44)}
)

func TestThreadProfiles(t *testing.T) {
	ring := NewCodeRing(0)
	for i := int64(1); i <= 3; i++ {
		s := samplesOf(i*1e9, testRow{RoleTrain, "forward", 0, mainLoop, 10})
		withThread(s, 41, "metrics-logger", 0.9, 0.02, 10, spinStack, 100)
		withThread(s, 42, "precompute", 0.8, 0.7, 10, mmStack, 100)
		s.IntraOpThreads, s.InterOpThreads = 2, 1
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back StackSamples
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err != nil {
			t.Fatal(err)
		}
		ring.Add(&back)
		if i == 2 {
			ring.compact()
		}
	}
	p := ring.Profile(2e9, 3e9)
	if p == nil || len(p.Threads) != 2 {
		t.Fatalf("profile threads = %+v", p)
	}
	if p.IntraOpThreads != 2 || p.InterOpThreads != 1 {
		t.Errorf("torch threads = %d, %d, want 2, 1", p.IntraOpThreads, p.InterOpThreads)
	}
	spin := p.Threads[0]
	if spin.TID != 41 || spin.Name != "metrics-logger" || spin.Samples != 200 || spin.Probes != 20 {
		t.Errorf("first thread = %+v, want the logger with the window's 200 samples and 20 probes", spin)
	}
	if g := spin.GIL(); g < 0.85 || g > 0.9 {
		t.Errorf("logger GIL share = %.3f, want 0.88", g)
	}
	if w, ok := spin.Where(); !ok || w.Name != "log_metrics" || w.File != "train_gil.py" || w.Line != 31 {
		t.Errorf("logger where = %+v, %v", w, ok)
	}
	if g := p.Threads[1].GIL(); g > 0.11 {
		t.Errorf("precompute GIL share = %.3f, want 0.1 (it runs without the GIL)", g)
	}
}

func TestThreadSamplesValidate(t *testing.T) {
	good := func() *StackSamples {
		s := samplesOf(1, zarrWorkers(1)...)
		withThread(s, 7, "logger", 1, 0, 5, spinStack, 10)
		return s
	}
	for _, tc := range []struct {
		name string
		bad  func(s *StackSamples)
		want string
	}{
		{"index out of range", func(s *StackSamples) { s.Threads[0].Rows[0].Stack[0] = len(s.Frames) }, "out of range"},
		{"negative tid", func(s *StackSamples) { s.Threads[0].TID = -1 }, "tid -1"},
		{"negative time", func(s *StackSamples) { s.Threads[0].CPUNs = -1 }, "negative"},
		{"negative row", func(s *StackSamples) { s.Threads[0].Rows[0].Ns = -1 }, "negative"},
		{"too many threads", func(s *StackSamples) { s.Threads = make([]ThreadSamples, MaxStackThreads+1) }, "threads"},
		{"negative torch threads", func(s *StackSamples) { s.IntraOpThreads = -2 }, "thread count"},
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
}
