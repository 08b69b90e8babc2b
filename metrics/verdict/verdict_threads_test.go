package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// thread is a stage.ThreadProfile of a thread whose hot path ends in the
// user's function fn at file:line.
func thread(tid int, name string, cpu, free float64, probes int64, fn, file string, line int) stage.ThreadProfile {
	u := stage.CodeFrame{Name: fn, File: file, Line: line}
	return stage.ThreadProfile{TID: tid, Name: name, CPU: cpu, Free: free, Probes: probes, Samples: 500, SampledNs: 5e9,
		Path: []stage.PathStep{{CodeFrame: stage.CodeFrame{Name: "Thread.run", File: "threading.py", Line: 975, Lib: "threading"}, Share: 1},
			{CodeFrame: u, Share: 1}},
		Hot: &stage.HotSpot{User: u, Share: 1, LineShare: 0.9}}
}

// TestGILRule plants a Python thread holding the GIL beside a training
// thread that waits for it (the metrics logger: 96 % of a core, the
// training thread on a CPU 8 % of the time, 1,283 switches a second), and
// the controls that must not be blamed for the GIL (a busy Python thread
// beside the network is contention all the same: it uses the cores).
func TestGILRule(t *testing.T) {
	const start = int64(1e18)
	slow := run(start, 100, func(int) map[string]int64 {
		return map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 60 * ms1, stage.Backward: 40 * ms1, stage.Optim: 45 * ms1}
	}).Summarize(0) // compute-bound by its shares
	waiting := HostCPU{UsableCores: 2, Demand: 1.1, Used: 1.05, WaitShare: 0.04, Training: 0.1, TrainingCPU: 0.08, Others: 0.97,
		IdleCores: 0.9, TrainingSwitches: 1300, TrainingPreempted: 17}
	busy := waiting
	busy.Training, busy.TrainingCPU, busy.TrainingSwitches = 0.97, 0.9, 40
	rare := waiting
	rare.TrainingSwitches, rare.TrainingPreempted = 60, 30 // blocks 30 times a second: not waiting for the GIL
	// The plant on a loaded 2-core box: the training thread queues for a
	// CPU after each hand-over (wanted 92 %, ran 9 %), the logger holds
	// the GIL 24 % of a core over 9 probes.
	loaded := waiting
	loaded.Training, loaded.TrainingCPU, loaded.TrainingSwitches, loaded.TrainingPreempted = 0.92, 0.09, 452, 291
	queued := thread(20313, "metrics-logger", 0.286, 0.047, 9, "log_metrics", "side_thread.py", 33)
	logger := thread(4242, "metrics-logger", 0.96, 0.01, 80, "log_metrics", "train_gil.py", 31)
	mm := thread(4243, "precompute", 0.9, 0.85, 80, "precompute", "train_gil.py", 44)
	for _, tc := range []struct {
		name     string
		cpu      HostCPU
		threads  []stage.ThreadProfile
		train    []stage.CodeGroup // the training thread's samples
		gpu      float64
		want     Kind
		contains []string
	}{
		{"a logger spinning in Python", waiting, []stage.ThreadProfile{logger, mm}, nil, 0, GILBound,
			[]string{`Python thread "metrics-logger" (tid 4242)`, "holds the GIL 95 % of a core", "`log_metrics` at train_gil.py:31",
				"on a CPU 8 % of the time", "blocks 1283 times a second", "move its work to a process", "sleep", "releases the GIL"}},
		{"the logger on a loaded box", loaded, []stage.ThreadProfile{queued}, nil, 0, GILBound,
			[]string{`"metrics-logger" (tid 20313) holds the GIL 24 % of a core in ` + "`log_metrics` at side_thread.py:33", "blocks 161 times a second"}},
		{"a thread in a big torch.mm (no GIL) is not blamed", waiting, []stage.ThreadProfile{mm}, nil, 0, Contention, []string{"other threads (Python thread", "beside the network"}},
		{"a thread that sleeps is not blamed", waiting, []stage.ThreadProfile{thread(9, "sleeper", 0.01, 0, 80, "s", "t.py", 1)}, nil, 0, ComputeBound, nil},
		{"a training thread that runs is not waiting for the GIL", busy, []stage.ThreadProfile{logger}, nil, 0, Contention, []string{"other threads (Python thread", "beside the network"}},
		{"a training thread that seldom blocks", rare, []stage.ThreadProfile{logger}, nil, 0, Contention, []string{"other threads (Python thread", "beside the network"}},
		{"too few probes", waiting, []stage.ThreadProfile{thread(4242, "metrics-logger", 0.96, 0, 3, "log_metrics", "train_gil.py", 31)}, nil, 0, Contention, []string{"other threads (Python thread", "beside the network"}},
		{"a busy GPU is what the step waits for", waiting, []stage.ThreadProfile{logger}, nil, 0.95, GPUBound, nil},
		{"old trainers send no threads", waiting, nil, nil, 0, ComputeBound, nil},
		{"a producer thread the loop waits on is not blamed", waiting, []stage.ThreadProfile{logger},
			[]stage.CodeGroup{{Role: stage.RoleTrain, Stage: stage.DataWait, SampledNs: 4e9,
				Top: []stage.FuncShare{{Name: "Condition.wait", File: "threading.py", Lib: "threading", Self: 0.8, Total: 0.8}}}},
			0, Contention, []string{"beside the network"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{CPU: &tc.cpu}
			if tc.gpu > 0 {
				h.GPUActivity, h.GPUActivitySource = tc.gpu, "GPM"
			}
			code := &stage.CodeProfile{Threads: tc.threads, Groups: tc.train}
			v := Judge(Inputs{Summary: slow, Live: true, Host: h, Code: code})
			if v.Kind != tc.want {
				t.Fatalf("kind = %s (%s), want %s", v.Kind, v, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
		})
	}
}

// TestTorchPoolNames: with torch's thread count, the trainer's intra-op
// pool is named by it, not by counting threads named like the process.
func TestTorchPoolNames(t *testing.T) {
	c := &HostCPU{Demand: 3, Pools: []CPUPool{{Role: "intra-op", Processes: 1, Busy: 1}, {Role: "training", Processes: 1, Busy: 1}}}
	if got := pools(c); got != "1 intra-op thread + 1 training thread" {
		t.Errorf("without torch's count: %q", got)
	}
	c.IntraOpThreads = 2
	if got := pools(c); !strings.Contains(got, "torch's 2 intra-op threads (torch.get_num_threads(), the training thread one of them)") ||
		strings.Contains(got, "other busy") {
		t.Errorf("with torch.get_num_threads() = 2: %q", got)
	}
	c.Pools[0].Busy = 3
	if got := pools(c); !strings.Contains(got, "+ 2 other busy threads") {
		t.Errorf("three busy threads named like the process beside torch's one pool thread: %q", got)
	}
}

// TestTrainingThreadAdviceNamesTorchThreads: the imagenet run (torch
// picked 1 intra-op thread on 2 cores, the other idle) is told the count
// torch reports and the one to set.
func TestTrainingThreadAdviceNamesTorchThreads(t *testing.T) {
	const start = int64(1e18)
	pyLoop := run(start, 200, func(int) map[string]int64 {
		return map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 20 * ms1, stage.Optim: ms1}
	}).Summarize(0)
	c := HostCPU{UsableCores: 2, Demand: 1.05, Used: 1.0, WaitShare: 0.05, Training: 0.98, TrainingCPU: 0.93, Others: 0.1, IdleCores: 0.95,
		IntraOpThreads: 1, TrainingSwitches: 20, TrainingPreempted: 5}
	v := Judge(Inputs{Summary: pyLoop, Live: true, Host: &Host{CPU: &c}})
	if v.Kind != TrainingThreadBound || !strings.Contains(v.Next, "torch runs 1 intra-op thread, torch.get_num_threads(): torch.set_num_threads(2) for the 2 usable cores") {
		t.Errorf("verdict %s", v)
	}
}
