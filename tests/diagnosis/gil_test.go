package diagnosis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// TestGILVerdicts plants a Python thread that holds the GIL beside a
// plain PyTorch training loop (a "metrics logger" summing numbers in pure
// Python): the verdict names the thread, its function at file:line and the
// fix. The controls run the same loop beside a thread that multiplies
// large matrices with torch (which releases the GIL), beside a logger that
// sleeps, and alone: none of them is gil-bound or names the side thread
// (the loop alone, one thread of tiny ops, may be training-thread-bound on
// an idle box: that is its own verdict). The planted thread runs under
// pipetop run, and its end-of-run summary must name it too. One at a
// time: each wants the CPUs to itself.
func TestGILVerdicts(t *testing.T) {
	testkit.Serial(t)
	runGIL(t, []gilCase{
		{"spin", true, []string{`Python thread "metrics-logger" (tid `, "holds the GIL", "in `log_metrics` at ", "side_thread.py:3", "training thread is on a CPU"}},
		{"mm", false, nil},
	})
}

// TestGILControls runs TestGILVerdicts' controls that no load can make
// hold the GIL (a logger that sleeps, the loop alone) beside the other
// tests: neither may be blamed.
func TestGILControls(t *testing.T) {
	testkit.Concurrent(t)
	runGIL(t, []gilCase{{"sleep", false, nil}, {"none", false, nil}})
}

// gilCase is a side thread of examples/auto/side_thread.py, whether the
// verdict must blame it and what its headline must say.
type gilCase struct {
	side     string
	blamed   bool
	headline []string
}

// runGIL runs each case, one at a time.
func runGIL(t *testing.T, cases []gilCase) {
	for _, tc := range cases {
		t.Run(tc.side, func(t *testing.T) {
			sc := scenario{name: "torch/side thread " + tc.side, start: autoScript("side_thread.py", "--side", tc.side),
				after: 5 * time.Second, interval: 3 * time.Second}
			var run endOfRun
			if tc.blamed {
				sc.start = underRun(&run, 0, nil, "side_thread.py", "--side", tc.side, "--seconds", "12")
			}
			cmd, logs, err := sc.start(t, sc.name)
			if err != nil {
				t.Fatal(err)
			}
			r := observeAs(sc, cmd.Env)
			if r.err != nil || r.verdict == nil {
				t.Fatalf("%v\n%s\npublisher stderr:\n%s", r.err, r.out, logs)
			}
			v := r.verdict
			t.Logf("%s", v)
			checkOwnThreads(t, r.out)
			if !tc.blamed {
				if v.Kind == verdict.GILBound || strings.Contains(v.Headline, "precompute") || strings.Contains(v.Headline, "metrics-logger") {
					t.Fatalf("a thread that does not hold the GIL was blamed: %s", v)
				}
				return
			}
			if v.Kind != verdict.GILBound {
				t.Fatalf("verdict %s, want %s\npublisher stderr:\n%s", v, verdict.GILBound, logs)
			}
			for _, want := range tc.headline {
				if !strings.Contains(v.Headline, want) {
					t.Errorf("headline %q lacks %q", v.Headline, want)
				}
			}
			for _, want := range []string{"move its work to a process", "sleep between rounds or batch its work", "releases the GIL"} {
				if !strings.Contains(v.Next, want) {
					t.Errorf("next step %q lacks %q", v.Next, want)
				}
			}
			end, err := run.endVerdict(60 * time.Second)
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, logs)
			}
			t.Logf("end of run: %s", end)
			if end.Kind != verdict.GILBound || !strings.Contains(end.Headline, "metrics-logger") || !strings.Contains(end.Headline, "log_metrics") {
				t.Errorf("end-of-run verdict %s, want %s naming the metrics-logger thread and log_metrics", end, verdict.GILBound)
			}
		})
	}
}

// checkOwnThreads checks a pipetop --json snapshot of side_thread.py: the
// publisher's own threads are in the threads part under their own names
// and role (so no CPU rule counts them), and torch's intra-op count came
// with the stack samples (the script sets 1).
func checkOwnThreads(t *testing.T, out []byte) {
	t.Helper()
	var snap struct {
		Threads *struct {
			Threads []struct {
				Name string `json:"name"`
				Role string `json:"role"`
			} `json:"threads"`
		} `json:"threads"`
		Code *struct {
			IntraOp int `json:"intra_op_threads"`
		} `json:"code"`
	}
	if err := json.Unmarshal(out, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Threads == nil {
		t.Fatal("no threads part")
	}
	own := 0
	for _, th := range snap.Threads.Threads {
		if strings.HasPrefix(th.Name, "pipetop") != (th.Role == "pipetop") {
			t.Errorf("thread %q has role %s", th.Name, th.Role)
		}
		if th.Role == "pipetop" {
			own++
		}
	}
	if own < 2 {
		t.Errorf("%d of the publisher's threads named in /proc, want its sampler, collector and server at least: %+v", own, snap.Threads.Threads)
	}
	if snap.Code == nil || snap.Code.IntraOp != 1 {
		t.Errorf("code part %+v: want torch's 1 intra-op thread", snap.Code)
	}
}
