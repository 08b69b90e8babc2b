package host

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
)

// fakeProc is a FAKE /proc tree on disk: processes with threads whose
// schedstat and status files the test writes.
type fakeProc struct {
	t    *testing.T
	root string
	// slices are the timeslices a thread's schedstat says, by tid (7
	// when unset).
	slices map[int]uint64
}

func newFakeProc(t *testing.T) *fakeProc {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "pressure"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "pressure", "cpu"),
		[]byte("some avg10=41.50 avg60=30.00 avg300=10.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"), 0o644))
	f := &fakeProc{t: t, root: root, slices: map[int]uint64{}}
	f.lastPID(300)
	return f
}

// lastPID writes /proc/loadavg with pid as the last pid handed out.
func (f *fakeProc) lastPID(pid int) {
	must(f.t, os.WriteFile(filepath.Join(f.root, "loadavg"), fmt.Appendf(nil, "0.10 0.20 0.30 1/99 %d\n", pid), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// process writes pid's stat (parent ppid) and its children list.
func (f *fakeProc) process(pid, ppid int, children ...int) {
	dir := filepath.Join(f.root, strconv.Itoa(pid))
	must(f.t, os.MkdirAll(filepath.Join(dir, "task"), 0o755))
	stat := fmt.Sprintf("%d (python3) S %d 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 100 9 0\n", pid, ppid)
	must(f.t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
	kids := ""
	for _, c := range children {
		kids += strconv.Itoa(c) + " "
	}
	f.thread(pid, pid, "python3", 0, 0, 0, 1)
	must(f.t, os.WriteFile(filepath.Join(dir, "task", strconv.Itoa(pid), "children"), []byte(kids), 0o644))
}

// thread writes one thread's files; threads is the process's count, read
// from its first thread.
func (f *fakeProc) thread(pid, tid int, name string, runNs, waitNs, nvcsw uint64, threads int) {
	dir := filepath.Join(f.root, strconv.Itoa(pid), "task", strconv.Itoa(tid))
	must(f.t, os.MkdirAll(dir, 0o755))
	slices, ok := f.slices[tid]
	if !ok {
		slices = 7
	}
	must(f.t, os.WriteFile(filepath.Join(dir, "schedstat"), fmt.Appendf(nil, "%d %d %d\n", runNs, waitNs, slices), 0o644))
	status := fmt.Sprintf("Name:\t%s\nState:\tR (running)\nThreads:\t%d\nCpus_allowed_list:\t0-3\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t%d\n", name, threads, nvcsw)
	must(f.t, os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644))
}

// sampler is a ThreadSampler over the tree, watching pid; training is
// the training thread's tid (0: unknown).
func (f *fakeProc) sampler(pid, training int) *ThreadSampler {
	s := NewThreadSampler(f.root)
	s.SetPID(pid, training)
	return s
}

func (f *fakeProc) exit(pid, tid int) {
	must(f.t, os.RemoveAll(filepath.Join(f.root, strconv.Itoa(pid), "task", strconv.Itoa(tid))))
}

func byTID(r ThreadsReading) map[int]ThreadInfo {
	m := map[int]ThreadInfo{}
	for _, t := range r.Threads {
		m[t.TID] = t
	}
	return m
}

// TestThreadSamplerFakeTree follows a FAKE tree whose threads appear and
// exit between and during reads: rates, roles, re-walks.
func TestThreadSamplerFakeTree(t *testing.T) {
	f := newFakeProc(t)
	f.process(100, 1, 200)
	f.thread(100, 100, "python3", 0, 0, 0, 3)
	f.thread(100, 101, "python3", 0, 0, 0, 3)
	f.thread(100, 102, "pt_main_thread", 0, 0, 0, 3)
	f.process(200, 100)
	s := f.sampler(100, 102)
	t0 := time.Unix(1000, 0)
	must(t, s.Sample(t0))
	r := s.Snapshot()
	if len(r.Threads) != 4 || !r.Alive || r.AffinityCPUs != 4 || r.UsableCores != 4 || !r.PressureOK || r.PressureSome.Avg10 != 41.5 {
		t.Fatalf("first reading = %+v", r)
	}
	got := byTID(r)
	wantRoles := map[int]string{100: RoleMain, 101: RoleIntraOp, 102: RoleTraining, 200: RoleWorker}
	for tid, role := range wantRoles {
		if got[tid].Role != role || !got[tid].Fresh {
			t.Errorf("tid %d = %+v, want role %s, fresh", tid, got[tid], role)
		}
	}
	// One second later: 101 ran 0.5 s and waited 0.25 s; 102 exits during
	// the read (its files are gone); 103 appears (the count moves).
	f.thread(100, 100, "python3", 1e8, 0, 0, 3)
	f.slices[101] = 7 + 300
	f.thread(100, 101, "python3", 5e8, 2.5e8, 40, 3)
	f.exit(100, 102)
	f.thread(100, 103, "gloo", 0, 0, 0, 3)
	f.thread(100, 100, "python3", 1e8, 0, 0, 3)
	must(t, s.Sample(t0.Add(time.Second)))
	got = byTID(s.Snapshot())
	if _, ok := got[102]; ok {
		t.Errorf("exited thread 102 listed: %+v", got[102])
	}
	if _, ok := got[103]; ok {
		t.Errorf("thread 103 listed before a re-walk: %+v", got[103])
	}
	if th := got[101]; th.Fresh || th.CPU != 50 || th.Wait != 25 || th.Preempted != 40 || th.Switches != 300 {
		t.Errorf("tid 101 = %+v, want CPU 50 %%, wait 25 %%, 40 preemptions/s, 300 switches/s", th)
	}
	if !s.walked.IsZero() {
		t.Fatal("a thread gone did not ask for a new walk")
	}
	must(t, s.Sample(t0.Add(2*time.Second)))
	got = byTID(s.Snapshot())
	if th, ok := got[103]; !ok || th.Role != RoleComm || !th.Fresh {
		t.Errorf("new thread 103 = %+v (listed %v), want a fresh comm thread", th, ok)
	}
	// The trainer exits: the reading says so.
	must(t, os.RemoveAll(filepath.Join(f.root, "100")))
	if err := s.Sample(t0.Add(3 * time.Second)); err == nil || s.Snapshot().Alive {
		t.Fatalf("gone trainer: err %v, alive %v", err, s.Snapshot().Alive)
	}
}

// TestThreadSamplerSelf watches this test process while four OS threads
// spin: they are listed with CPU, and on a box with fewer free cores than
// spinners their run-queue wait shows.
func TestThreadSamplerSelf(t *testing.T) {
	s := NewThreadSampler("")
	s.SetPID(os.Getpid(), 0)
	// Four spinners hold four Ps: with fewer, the Go scheduler parks the
	// rest (asleep, not waiting for a CPU).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	var stop atomic.Bool
	var wg sync.WaitGroup
	tids := make(chan int, 4)
	for range 4 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- syscall.Gettid()
			for !stop.Load() {
			}
		})
	}
	spinners := map[int]bool{}
	for range 4 {
		spinners[<-tids] = true
	}
	defer func() { stop.Store(true); wg.Wait() }()
	start := time.Now()
	must(t, s.Sample(start))
	time.Sleep(300 * time.Millisecond)
	must(t, s.Sample(time.Now()))
	r := s.Snapshot()
	var cpu, demand float64
	seen := 0
	for _, th := range r.Threads {
		if spinners[th.TID] {
			seen++
			cpu += th.CPU
			demand += th.CPU + th.Wait
		}
	}
	if seen != 4 || cpu <= 0 {
		t.Fatalf("spinners seen %d, CPU %.0f %% (threads %+v)", seen, cpu, r.Threads)
	}
	// Four spinners want four cores for the whole interval: on a CPU or
	// waiting for one.
	if demand < 300 || demand > 480 {
		t.Errorf("spinners' CPU + wait = %.0f %%, want about 400", demand)
	}
	if n := runtime.NumCPU(); n < 4 && r.AffinityCPUs > 0 && r.AffinityCPUs < 4 && demand-cpu < 50 {
		t.Errorf("4 spinners on %d CPUs waited only %.0f %%", r.AffinityCPUs, demand-cpu)
	}
	t.Logf("spinners: CPU %.0f %%, wait %.0f %%; affinity %d CPUs, usable %.2f, quota %+v, pressure %+v",
		cpu, demand-cpu, r.AffinityCPUs, r.UsableCores, r.Quota, r.PressureSome)
}

// TestThreadSamplerQuota runs a spinning shell in a real cgroup with a
// 0.2-CPU quota: the quota is read as 0.2 CPUs, the usable cores follow
// it, and throttled periods show.
func TestThreadSamplerQuota(t *testing.T) {
	dir, add := testkit.CPUQuotaCgroup(t, 0.2)
	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	add(cmd.Process.Pid)
	s := NewThreadSampler("")
	s.SetPID(cmd.Process.Pid, 0)
	must(t, s.Sample(time.Now()))
	time.Sleep(500 * time.Millisecond)
	must(t, s.Sample(time.Now()))
	r := s.Snapshot()
	if r.Quota.Dir != dir || r.Quota.CPUs < 0.199 || r.Quota.CPUs > 0.201 || r.UsableCores != r.Quota.CPUs {
		t.Fatalf("quota = %+v, usable %.2f; want 0.2 CPUs in %s", r.Quota, r.UsableCores, dir)
	}
	if r.Quota.Throttled == 0 || r.Quota.ThrottledSeconds <= 0 {
		t.Fatalf("a spinning shell at 0.2 CPUs was not throttled: %+v", r.Quota)
	}
	if len(r.Threads) != 1 || r.Threads[0].CPU > 40 {
		t.Fatalf("threads = %+v, want one held to about 20 %%", r.Threads)
	}
}

// TestThreadSamplerKeepsStatusOfThreadsThatDidNotWait: a thread that
// waited for a CPU less than statusWait, or less than 1 % of the time,
// since its status was read keeps that status without a read (a rename
// shows at the next walk), even if it ran, once it has been seen for
// TreeEvery (a thread names itself when it starts); one that waited is
// read again, its preemptions a rate over the time since the last read;
// the first thread is read every time (its count).
func TestThreadSamplerKeepsStatusOfThreadsThatDidNotWait(t *testing.T) {
	f := newFakeProc(t)
	f.process(100, 1)
	f.thread(100, 100, "python3", 1e8, 0, 0, 3)
	f.thread(100, 101, "python3", 5e8, 0, 4, 3)
	f.thread(100, 102, "python3", 7e8, 0, 9, 3)
	s := f.sampler(100, 0)
	t0 := time.Unix(1000, 0)
	must(t, s.Sample(t0))
	// A second later 101 names itself: it is new, so its status is read.
	f.thread(100, 101, "pt_pool", 5e8, 0, 4, 3)
	must(t, s.Sample(t0.Add(time.Second)))
	if th := byTID(s.Snapshot())[101]; th.Name != "pt_pool" {
		t.Errorf("thread 101 (new, renamed) = %+v, want its new name", th)
	}
	// After TreeEvery, no pid handed out, no walk: 101 runs but waits 2
	// ms in 5 s, and its status says otherwise; 102 waits 60 ms; the
	// leader sleeps, and its count moves to 4.
	at := t0.Add(TreeEvery + time.Second)
	f.thread(100, 101, "renamed", 6e8, 2e6, 50, 3)
	f.thread(100, 102, "worker", 8e8, 6e7, 19, 3)
	f.thread(100, 100, "python3", 1e8, 0, 0, 4)
	must(t, s.Sample(at))
	got := byTID(s.Snapshot())
	if th := got[101]; th.Name != "pt_pool" || th.Preempted != 0 || th.CPU != 2 {
		t.Errorf("thread 101 (no wait) = %+v, want 2 %% CPU, its name and switches as they were", th)
	}
	if th := got[102]; th.Name != "worker" || th.Preempted != 2 || th.CPU != 2 {
		t.Errorf("thread 102 (waited) = %+v, want its status read again: 10 switches over 5 s", th)
	}
	if !s.walked.IsZero() {
		t.Error("the first thread's count moved and no walk was asked for")
	}
	// The walk reads every status: 101's 46 switches since its read at t0+1s.
	must(t, s.Sample(at.Add(time.Second)))
	if th := byTID(s.Snapshot())[101]; th.Name != "renamed" || th.Preempted != 46.0/6 {
		t.Errorf("after a walk, thread 101 = %+v, want its new name and 46 switches over 6 s", th)
	}
}

// TestThreadSamplerWalksWhenAPIDWasHandedOut: after TreeEvery the tree is
// walked again only if /proc/loadavg's last pid moved, and after TreeQuiet
// in any case; a new process shows at that walk.
func TestThreadSamplerWalksWhenAPIDWasHandedOut(t *testing.T) {
	f := newFakeProc(t)
	f.process(100, 1)
	s := f.sampler(100, 0)
	t0 := time.Unix(1000, 0)
	listed := func(at time.Duration, tid int) bool {
		t.Helper()
		must(t, s.Sample(t0.Add(at)))
		_, ok := byTID(s.Snapshot())[tid]
		return ok
	}
	listed(0, 100)
	f.process(100, 1, 200)
	f.process(200, 100)
	if listed(TreeEvery+time.Second, 200) {
		t.Error("walked after TreeEvery though no pid was handed out")
	}
	f.lastPID(301)
	if !listed(TreeEvery+2*time.Second, 200) {
		t.Error("a pid was handed out and the new process is not listed after TreeEvery")
	}
	f.process(100, 1, 200, 201)
	f.process(201, 100)
	if listed(TreeQuiet, 201) {
		t.Error("walked again though no pid was handed out")
	}
	if !listed(TreeEvery+2*time.Second+TreeQuiet, 201) {
		t.Error("not walked after TreeQuiet")
	}
}

// TestThreadSamplerReadsQuietThreadsOnceAWindow: a thread that ran and
// waited under 1 % of a core is read once in each quietEvery window and
// shows its last reading in between; its next reading is the mean since;
// a busy thread is read every time.
func TestThreadSamplerReadsQuietThreadsOnceAWindow(t *testing.T) {
	f := newFakeProc(t)
	f.process(100, 1)
	f.thread(100, 100, "python3", 0, 0, 0, 3)
	f.thread(100, 101, "python3", 0, 0, 0, 3)
	f.thread(100, 104, "python3", 0, 0, 0, 3)
	s := f.sampler(100, 0)
	t0 := time.Unix(1000, 0) // thread 104's window: 1000 to 1004 s
	at := func(sec int, run101, run104 uint64) map[int]ThreadInfo {
		t.Helper()
		f.thread(100, 101, "python3", run101, 0, 0, 3)
		f.thread(100, 104, "python3", run104, run104/2, 0, 3)
		must(t, s.Sample(t0.Add(time.Duration(sec)*time.Second)))
		return byTID(s.Snapshot())
	}
	at(0, 0, 0)
	got := at(1, 5e8, 4e6) // 104: 0.4 % on a CPU, 0.2 % waiting: quiet
	if th := got[104]; th.CPU != 0.4 || th.Wait != 0.2 || th.Fresh {
		t.Fatalf("thread 104 = %+v, want 0.4 %% CPU, 0.2 %% wait", th)
	}
	for _, step := range []struct {
		sec int
		run uint64
	}{{2, 2e7}, {3, 2.4e7}} {
		sec := step.sec
		got = at(sec, 5e8*uint64(sec), step.run)
		if th := got[104]; th.CPU != 0.4 || th.Wait != 0.2 {
			t.Errorf("at %d s, quiet thread 104 = %+v, want the reading of 1 s (held)", sec, th)
		}
		if th := got[101]; th.CPU != 50 {
			t.Errorf("at %d s, busy thread 101 = %+v, want 50 %% CPU (read)", sec, th)
		}
	}
	got = at(4, 2e9, 3.4e7) // a new window: 30 ms over 3 s, no longer quiet
	if th := got[104]; th.CPU != 1 || th.Wait != 0.5 {
		t.Errorf("at 4 s, thread 104 = %+v, want 1 %% CPU and 0.5 %% wait since 1 s", th)
	}
	got = at(5, 2.5e9, 4.4e7)
	if th := got[104]; th.CPU != 1 {
		t.Errorf("at 5 s, thread 104 = %+v, want 1 %% CPU: read again, not quiet", th)
	}
}

// TestThreadSamplerWalkReadsQuietThreads: a walk reads every thread, a
// quiet one in the middle of its window too: its rename and its mean since
// its last read show at once.
func TestThreadSamplerWalkReadsQuietThreads(t *testing.T) {
	f := newFakeProc(t)
	f.process(100, 1)
	f.thread(100, 100, "python3", 0, 0, 0, 2)
	f.thread(100, 104, "python3", 0, 0, 0, 2)
	s := f.sampler(100, 0)
	t0 := time.Unix(1000, 0) // thread 104's window: 1000 to 1004 s
	must(t, s.Sample(t0))
	f.thread(100, 104, "python3", 4e6, 2e6, 0, 2)
	must(t, s.Sample(t0.Add(time.Second)))
	// At 2 s the quiet 104 renames itself and a thread starts: the
	// leader's count moves, so the next Sample walks.
	f.thread(100, 104, "pt_pool", 1e7, 5e6, 0, 2)
	f.thread(100, 100, "python3", 0, 0, 0, 3)
	f.thread(100, 108, "python3", 0, 0, 0, 3)
	must(t, s.Sample(t0.Add(2*time.Second)))
	if th := byTID(s.Snapshot())[104]; th.Name != "python3" || th.CPU != 0.4 {
		t.Fatalf("at 2 s, quiet thread 104 = %+v, want its reading of 1 s (held)", th)
	}
	must(t, s.Sample(t0.Add(3*time.Second)))
	got := byTID(s.Snapshot())
	if th := got[104]; th.Name != "pt_pool" || th.CPU != 0.3 || th.Wait != 0.15 {
		t.Errorf("after a walk at 3 s, thread 104 = %+v, want pt_pool at 0.3 %% CPU and 0.15 %% wait since 1 s", th)
	}
	if th, ok := got[108]; !ok || !th.Fresh {
		t.Errorf("after the walk, new thread 108 = %+v (listed %v), want it fresh", th, ok)
	}
}

// TestRoleOfNames: roles from thread names, pipetop's own threads apart
// from the pool threads that carry the process's name.
func TestRoleOfNames(t *testing.T) {
	leader := []byte("python3")
	for _, tc := range []struct {
		name string
		want string
	}{
		{"pipetop-stacks", RolePipetop},
		{"pipetop-hotcod", RolePipetop},
		{"python3", RoleIntraOp},
		{"gloo-worker", RoleComm},
		{"pin_memory", RolePinMemory},
		{"metrics", RoleOther},
	} {
		if got := RoleOf([]byte(tc.name), leader, 11, 10, 12, true, false); got != tc.want {
			t.Errorf("RoleOf(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}
