package diagnosis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// endOfRun is a run started under pipetop run --no-tui --json: its
// stdout, where the end-of-run summaries come when it ends.
type endOfRun struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

// underRun returns a scenario start that runs the unmodified script of
// examples/auto under pipetop run (in a cgroup with a quota of cpus CPUs
// from its first instruction, when cpus > 0), with its own socket and
// summary directories and the extra environment env; *run is set to it,
// for endVerdict.
func underRun(run *endOfRun, cpus float64, env []string, script string, args ...string) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
	return func(t *testing.T, _ string) (*exec.Cmd, *bytes.Buffer, error) {
		if out, err := exec.Command(python, "-c", "import torch, zarr").CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("%s cannot import torch and zarr (scripts/install-deps.sh installs them): %v\n%s", python, err, out)
		}
		path, err := filepath.Abs(filepath.Join("../../examples/auto", script))
		if err != nil {
			return nil, nil, err
		}
		argv := append([]string{filepath.Join(bins, "pipetop"), "run", "--no-tui", "--json", "--", python, path}, args...)
		if cpus > 0 {
			dir, _ := testkit.CPUQuotaCgroup(t, cpus)
			argv = append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir}, argv...)
		}
		sockets, err := os.MkdirTemp("/tmp", "diag")
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+sockets, "PIPETOP_SUMMARY_DIR="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
		cmd.Env = append(cmd.Env, env...)
		stderr := &bytes.Buffer{}
		*run = endOfRun{cmd: cmd, out: &bytes.Buffer{}}
		cmd.Stdout, cmd.Stderr = run.out, stderr
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			os.RemoveAll(sockets)
		})
		return cmd, stderr, nil
	}
}

// endVerdict waits up to d for the run to end and returns the verdict of
// its end-of-run summary (the first process's).
func (r *endOfRun) endVerdict(d time.Duration) (*verdict.Verdict, error) {
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("pipetop run: %w\n%s", err, r.out)
		}
	case <-time.After(d):
		r.cmd.Process.Kill()
		return nil, fmt.Errorf("pipetop run still running after %v", d)
	}
	var docs []struct {
		Verdict *verdict.Verdict `json:"verdict"`
		HostCPU json.RawMessage  `json:"host_cpu"`
	}
	if err := json.Unmarshal(r.out.Bytes(), &docs); err != nil || len(docs) == 0 || docs[0].Verdict == nil {
		return nil, fmt.Errorf("pipetop run --json printed no judged summary (%v):\n%s", err, r.out)
	}
	return docs[0].Verdict, nil
}

// TestCPUVerdictsAtTheEnd plants the CPU findings in plain PyTorch
// scripts run under pipetop run, and checks the live verdict and the
// end-of-run summary's alike: the summary judges the whole run with the
// host and thread readings pipetop run kept while it trained. A throttled
// run (a 0.3-CPU quota under 4 threads: TestThrottledAtTheEnd runs it
// beside the other tests), a pure-Python step
// (training-thread-bound), 2 intra-op threads beside 2 busy single-thread
// workers on this box's 2 cores (oversubscribed: the issue's
// diffusion_policy setting; the BLAS library's own threads in each
// process take it to about 2.6x here, the headline names the training
// thread's wait), and its control with 1 thread and 1 worker
// (OMP_NUM_THREADS=1 keeps the BLAS library's own pool to that thread:
// its one worker is slower than the loop, so it waits on its input or
// keeps up, as the box's load goes: judged at the end only); a
// CPU-bound network beside workers decoding 500-frame Zarr chunks
// (loader-takes-cores; OMP_NUM_THREADS=1 keeps the BLAS pool out of the
// network's 2 torch threads) and the same on 1-frame chunks, not blamed
// (compute-bound live; at the end also moderately input-bound: a whole run
// whose workers start and read 4 files a sample on a loaded box).
func TestCPUVerdictsAtTheEnd(t *testing.T) {
	testkit.Serial(t)
	runEndScenarios(t, func(sc endScenario) bool { return !sc.quota })
}

// TestThrottledAtTheEnd is TestCPUVerdictsAtTheEnd's plant under a CPU
// quota: the cgroup's own throttled periods are what it reads, which the
// box's load does not change (throttled ranks before oversubscribed), so
// it runs beside the other tests.
func TestThrottledAtTheEnd(t *testing.T) {
	testkit.Concurrent(t)
	runEndScenarios(t, func(sc endScenario) bool { return sc.quota })
}

// endScenario is a plant judged live and at the end of its pipetop run.
type endScenario struct {
	scenario
	run     *endOfRun
	end     verdict.Kind   // the end-of-run summary's kind
	endAlso []verdict.Kind // other acceptable kinds at the end
	endOnly bool           // a control judged at the end only: its live kind moves with the box's load
	quota   bool           // run under a CPU quota
}

// runEndScenarios runs the end-of-run plants that keep selects, one at a
// time.
func runEndScenarios(t *testing.T, keep func(endScenario) bool) {
	zarr := func(t *testing.T, chunk int) string {
		data := filepath.Join(t.TempDir(), "frames-"+strconv.Itoa(chunk)+".zarr")
		make := exec.Command(python, "../../examples/auto/make_zarr.py", data, "--frames", "2000", "--side", "96", "--chunk-frames", strconv.Itoa(chunk))
		if out, err := make.CombinedOutput(); err != nil {
			t.Fatalf("make_zarr.py: %v\n%s", err, out)
		}
		return data
	}
	plant := func(sc scenario, end verdict.Kind, start func(*endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error), endAlso ...verdict.Kind) endScenario {
		e := endScenario{scenario: sc, run: &endOfRun{}, end: end, endAlso: endAlso}
		e.start = start(e.run)
		return e
	}
	scs := []endScenario{
		plant(scenario{name: "torch/a 0.3-CPU quota under 4 threads: throttled, live and at the end",
			after: 6 * time.Second, interval: 2 * time.Second, kind: verdict.Throttled,
			headline: []string{"quota of 0.3 CPUs", "of its periods"}, next: []string{"raise the limit"}}, verdict.Throttled,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return underRun(r, 0.3, nil, "threads.py", "--threads", "4", "--seconds", "14")
			}),
		plant(scenario{name: "torch/pure-Python steps: training-thread-bound, live and at the end",
			after: 4 * time.Second, interval: 2 * time.Second, kind: verdict.TrainingThreadBound, stage: "forward",
			headline: []string{"the training thread wanted a CPU"}, next: []string{"vectorised"}}, verdict.TrainingThreadBound,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return underRun(r, 0, nil, "threads.py", "--python", "--seconds", "10")
			}),
		plant(scenario{name: "torch/2 intra-op threads + 2 busy workers on 2 cores: oversubscribed, live and at the end",
			after: 5 * time.Second, interval: 2 * time.Second, kind: verdict.Oversubscribed,
			headline: []string{"oversubscribed:", "busy loader worker", "the training thread"}, next: []string{"torch.set_num_threads", "OMP_NUM_THREADS=1"}}, verdict.Oversubscribed,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return underRun(r, 0, nil, "threads.py", "--threads", "2", "--workers", "2", "--worker-threads", "1", "--seconds", "12")
			}),
		// The same without OpenBLAS's own spinning threads (OMP_NUM_THREADS=1):
		// about 1.4x the cores wanted, near the threshold, and still 2x
		// slower than one intra-op thread.
		plant(scenario{name: "torch/2 intra-op threads + 2 busy workers, no BLAS spinners: oversubscribed near the threshold",
			after: 5 * time.Second, interval: 3 * time.Second, kind: verdict.Oversubscribed,
			headline: []string{"oversubscribed:", "busy loader worker", "the training thread"}, next: []string{"torch.set_num_threads"}}, verdict.Oversubscribed,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return underRun(r, 0, []string{"OMP_NUM_THREADS=1"}, "threads.py", "--threads", "2", "--workers", "2", "--worker-threads", "1", "--seconds", "12")
			}),
		plant(scenario{name: "torch/1 thread + 1 worker on 2 cores: not oversubscribed",
			after: 5 * time.Second, interval: 2 * time.Second, kind: verdict.ModerateInput, stage: "data_wait", also: []verdict.Kind{verdict.InputBound}}, verdict.ModerateInput,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return underRun(r, 0, []string{"OMP_NUM_THREADS=1"}, "threads.py", "--threads", "1", "--workers", "1", "--worker-threads", "1", "--seconds", "12")
			}, verdict.InputBound, verdict.ComputeBound, verdict.Contention),
		// On a loaded box the workers' share of the run's CPU can fall just
		// under LoaderCores (one CI run: 0.25 of 2 cores, busy 57 %): the
		// same culprit is then named by contention, never another one.
		plant(scenario{name: "torch/workers decode 500-frame zarr chunks beside a CPU-bound network: loader-takes-cores",
			after: 8 * time.Second, interval: 2 * time.Second, kind: verdict.LoaderTakesCores, stage: "backward",
			headline: []string{"loader-takes-cores: the DataLoader workers take", "from the network", "the network takes"},
			next:     []string{"data/camera", "500x", "--chunk-frames 1", "pipetop bisect -- CMD"},
			also:     []verdict.Kind{verdict.Contention}, alsoHas: []string{"loader workers use", "beside the network"}}, verdict.LoaderTakesCores,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return func(t *testing.T, name string) (*exec.Cmd, *bytes.Buffer, error) {
					return underRun(r, 0, []string{"OMP_NUM_THREADS=1"}, "zarr_network.py", zarr(t, 500), "--seconds", "14", "--batch", "48", "--epoch", "20000")(t, name)
				}
			}, verdict.Contention),
		// Not blamed for the chunking (no loader-takes-cores), but the
		// workers decoding beside the network use its cores (0.28 of 2
		// read at the end of one run: 14 %): contention names them, or,
		// below BesideCores on a quieter box, compute-bound.
		plant(scenario{name: "torch/workers on 1-frame zarr chunks beside a CPU-bound network: not blamed for the chunks",
			after: 8 * time.Second, interval: 2 * time.Second, kind: verdict.Contention, stage: "backward",
			headline: []string{"contention:", "beside the network"}, next: []string{"pipetop bisect -- CMD"},
			also: []verdict.Kind{verdict.ComputeBound}, alsoHas: []string{"input keeps up"}}, verdict.Contention,
			func(r *endOfRun) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
				return func(t *testing.T, name string) (*exec.Cmd, *bytes.Buffer, error) {
					return underRun(r, 0, []string{"OMP_NUM_THREADS=1"}, "zarr_network.py", zarr(t, 1), "--seconds", "14", "--batch", "48", "--epoch", "20000")(t, name)
				}
			}, verdict.ComputeBound, verdict.ModerateInput),
	}
	scs[0].quota = true
	scs[4].endOnly = true // 1 thread + 1 worker: compute-bound or waiting on its worker, never oversubscribed
	for _, sc := range scs {
		if !keep(sc) {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			cmd, logs, err := sc.start(t, sc.name)
			if err != nil {
				t.Fatal(err)
			}
			if !sc.endOnly {
				r := observe(sc.scenario, cmd.Env)
				r.logs = logs
				check(t, sc.scenario, r)
			}
			v, err := sc.run.endVerdict(90 * time.Second)
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, logs)
			}
			if v.Kind != sc.end && !slices.Contains(sc.endAlso, v.Kind) {
				t.Fatalf("end-of-run verdict %s, want %s\nstderr:\n%s", v, sc.end, logs)
			}
			for _, want := range sc.alsoHas {
				if v.Kind != sc.end && !strings.Contains(v.String(), want) {
					t.Errorf("end-of-run verdict %q lacks %q", v, want)
				}
			}
			t.Logf("end of run: %s", v)
		})
	}
}
