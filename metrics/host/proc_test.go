package host

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/pipetop/pipetop/metrics"
)

// TestProcSamplerSelf watches this test process and cross-checks threads
// and RSS against gopsutil.
func TestProcSamplerSelf(t *testing.T) {
	pid := os.Getpid()
	s := NewProcSampler(pid, "")
	now := time.Now()
	if err := s.Sample(now); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Process.CPU.State; got != metrics.Missing {
		t.Fatalf("first CPU state = %v, want missing", got)
	}
	burn(100 * time.Millisecond)
	if err := s.Sample(now.Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	p := snap.Process
	if !snap.Alive || p.PID != pid || p.PPID != os.Getppid() {
		t.Fatalf("snapshot = %+v, want alive pid %d ppid %d", snap, pid, os.Getppid())
	}
	if !p.CPU.Valid() || p.CPU.V <= 0 {
		t.Fatalf("CPU = %+v after burning 100ms", p.CPU)
	}
	if me, err := user.Current(); err != nil || p.User != me.Username {
		t.Errorf("user = %q, want %v (%v)", p.User, me, err)
	}
	gp, err := process.NewProcess(int32(pid))
	if err != nil {
		t.Fatal(err)
	}
	threads, err := gp.NumThreads()
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Threads.V - float64(threads); d < -2 || d > 2 {
		t.Errorf("threads = %v, gopsutil says %d", p.Threads.V, threads)
	}
	mi, err := gp.MemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	if r := p.RSS.V / float64(mi.RSS); r < 0.8 || r > 1.25 {
		t.Errorf("RSS = %v, gopsutil says %d", p.RSS.V, mi.RSS)
	}
	if !p.ReadRate.Valid() || p.ReadRate.Source != SourceProcPIDIO {
		t.Errorf("ReadRate = %+v, want a valid /proc/PID/io rate for our own process", p.ReadRate)
	}
}

// TestProcSamplerChildren starts an idle and a busy child and expects both
// in the child list, the busy one at the CPU share gopsutil measures over the
// same window. The window lasts until the busy child has run 300 ms, so a
// loaded machine lengthens the test instead of failing it.
func TestProcSamplerChildren(t *testing.T) {
	idle := startChild(t, "sleep", "30")
	busy := startChild(t, "sh", "-c", "while :; do :; done")
	settle(t, idle.Process.Pid)
	s := NewProcSampler(os.Getpid(), "")
	before := childCPU(t, busy.Process.Pid)
	start := time.Now()
	if err := s.Sample(start); err != nil {
		t.Fatal(err)
	}
	for childCPU(t, busy.Process.Pid)-before < 0.3 && time.Since(start) < 20*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	end := time.Now()
	if err := s.Sample(end); err != nil {
		t.Fatal(err)
	}
	used := childCPU(t, busy.Process.Pid) - before
	kids := s.Snapshot().Children
	byPID := map[int]ProcInfo{}
	for _, k := range kids {
		byPID[k.PID] = k
	}
	ki, ok := byPID[idle.Process.Pid]
	if !ok || ki.Comm != "sleep" || ki.PPID != os.Getpid() {
		t.Fatalf("idle child %d not listed right: %+v", idle.Process.Pid, kids)
	}
	kb, ok := byPID[busy.Process.Pid]
	if !ok || kb.Comm != "sh" {
		t.Fatalf("busy child %d not listed: %+v", busy.Process.Pid, kids)
	}
	// gopsutil's reads bracket the sampler's, so the sampler may see up to
	// a few clock ticks less than gopsutil on a loaded machine.
	wall := end.Sub(start).Seconds()
	want, slack := 100*used/wall, 100*0.05/wall
	if !kb.CPU.Valid() || kb.CPU.V > want+1e-9 || kb.CPU.V < want-slack {
		t.Errorf("busy child CPU = %+v, gopsutil says %.1f%% (±%.1f) over %.2fs", kb.CPU, want, slack, wall)
	}
	if !ki.CPU.Valid() || ki.CPU.V > 5 {
		t.Errorf("idle child CPU = %+v, want ~0", ki.CPU)
	}
	if !slices.IsSortedFunc(kids, func(a, b ProcInfo) int { return a.PID - b.PID }) {
		t.Errorf("children not sorted by pid")
	}
}

// settle waits until pid has stopped using CPU, so a child still loading on
// a busy machine is not measured as busy.
func settle(t *testing.T, pid int) {
	t.Helper()
	last := childCPU(t, pid)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		now := childCPU(t, pid)
		if now == last {
			return
		}
		last = now
	}
	t.Fatalf("child %d still using CPU after 20s", pid)
}

// childCPU is the user+system CPU seconds gopsutil reads for pid.
func childCPU(t *testing.T, pid int) float64 {
	t.Helper()
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Times()
	if err != nil {
		t.Fatal(err)
	}
	return c.User + c.System
}

// A child started after a walk of the tree shows from the next walk, at
// most TreeEvery later; one that exits is dropped at once and makes the
// next sample walk again.
func TestProcSamplerWalksTheTreeEvery(t *testing.T) {
	s := NewProcSampler(os.Getpid(), "")
	now := time.Now()
	listed := func(at time.Duration, pid int) bool {
		t.Helper()
		if err := s.Sample(now.Add(at)); err != nil {
			t.Fatal(err)
		}
		for _, k := range s.Snapshot().Children {
			if k.PID == pid {
				return true
			}
		}
		return false
	}
	listed(0, -1) // the first walk, before the child
	child := startChild(t, "sleep", "30")
	pid := child.Process.Pid
	if listed(time.Second, pid) {
		t.Fatal("the tree was walked again before TreeEvery")
	}
	if !listed(TreeEvery, pid) {
		t.Fatal("a new child is not listed after TreeEvery")
	}
	child.Process.Kill()
	child.Wait()
	if listed(TreeEvery+time.Second, pid) {
		t.Fatal("an exited child is still listed")
	}
	again := startChild(t, "sleep", "30")
	if !listed(TreeEvery+2*time.Second, again.Process.Pid) {
		t.Fatal("a child gone did not make the next sample walk the tree")
	}
}

func TestProcSamplerGoneProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	s := NewProcSampler(pid, "")
	err := s.Sample(time.Now())
	if err == nil || err.Error() != "process "+itoa(pid)+" is gone" {
		t.Fatalf("err = %v, want process %d is gone", err, pid)
	}
	if s.Snapshot().Alive {
		t.Fatal("Alive for an exited process")
	}
	s.SetPID(os.Getpid())
	if err := s.Sample(time.Now()); err != nil || !s.Snapshot().Alive {
		t.Fatalf("after SetPID: err %v alive %v", err, s.Snapshot().Alive)
	}
}

// TestProcSamplerFixture checks rate math and pid-reuse detection on a
// fixed procfs tree.
func TestProcSamplerFixture(t *testing.T) {
	root := t.TempDir()
	stat := func(start, utime, stime string) string {
		return "42 (my (odd) name) S 1 42 42 0 -1 4194304 100 0 0 0 " + utime + " " + stime +
			" 0 0 20 0 7 0 " + start + " 1000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	}
	io := func(r, w string) string {
		return "rchar: " + r + "\nwchar: " + w + "\nsyscr: 1\nsyscw: 1\nread_bytes: " + r + "\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
	}
	writeFile(t, filepath.Join(root, "42/stat"), stat("500", "100", "50"))
	writeFile(t, filepath.Join(root, "42/io"), io("1000", "0"))
	writeFile(t, filepath.Join(root, "42/task/42/children"), "")
	s := NewProcSampler(42, root)
	s.ticks = 100
	if err := s.Sample(time.Unix(10, 0)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "42/stat"), stat("500", "200", "100"))
	writeFile(t, filepath.Join(root, "42/io"), io("3000", "500"))
	if err := s.Sample(time.Unix(12, 0)); err != nil {
		t.Fatal(err)
	}
	p := s.Snapshot().Process
	checks := []struct {
		name string
		got  metrics.Value
		want float64
	}{
		{"cpu %", p.CPU, 75}, // 150 ticks / 100 Hz / 2 s
		{"threads", p.Threads, 7},
		{"rss", p.RSS, 300 * float64(os.Getpagesize())},
		{"read B/s", p.ReadRate, 1000},
		{"write B/s", p.WriteRate, 250},
		{"disk read B/s", p.DiskReadRate, 1000},
	}
	for _, c := range checks {
		if !c.got.Valid() || c.got.V != c.want {
			t.Errorf("%s = %+v, want %v", c.name, c.got, c.want)
		}
	}
	if p.Comm != "my (odd) name" {
		t.Errorf("comm = %q", p.Comm)
	}
	// Same pid, new start time: a different process, so rates restart.
	writeFile(t, filepath.Join(root, "42/stat"), stat("900", "300", "100"))
	if err := s.Sample(time.Unix(14, 0)); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Process.CPU.State; got != metrics.Missing {
		t.Errorf("CPU state after pid reuse = %v, want missing", got)
	}
	// Unreadable io file: IO reads as not supported, not zero.
	os.Remove(filepath.Join(root, "42/io"))
	if err := s.Sample(time.Unix(16, 0)); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Process.ReadRate.State; got != metrics.NotSupported {
		t.Errorf("ReadRate state without io = %v", got)
	}
	writeFile(t, filepath.Join(root, "42/stat"), "42 (x) S 1 2\n")
	if err := s.Sample(time.Unix(18, 0)); err == nil || !strings.Contains(err.Error(), "/proc/42/stat: only 5 fields") {
		t.Errorf("truncated stat err = %v", err)
	}
}

func startChild(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func burn(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestProcSamplerOwnerReadAtWalks: a process's owner is read when it is
// first seen and again at each walk of the tree, not every sample.
func TestProcSamplerOwnerReadAtWalks(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "42/stat"), "42 (x) S 1 42 42 0 -1 4194304 100 0 0 0 1 1 0 0 20 0 7 0 500 1000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n")
	writeFile(t, filepath.Join(root, "42/task/42/children"), "")
	dir := filepath.Join(root, "42")
	must(t, os.Chown(dir, 4242, 4242))
	s := NewProcSampler(42, root)
	t0 := time.Unix(10, 0)
	must(t, s.Sample(t0))
	if got := s.Snapshot().Process.User; got != "4242" {
		t.Fatalf("user = %q, want 4242", got)
	}
	must(t, os.Chown(dir, 4343, 4343))
	must(t, s.Sample(t0.Add(time.Second)))
	if got := s.Snapshot().Process.User; got != "4242" {
		t.Errorf("between walks, user = %q, want the one read before (4242)", got)
	}
	must(t, s.Sample(t0.Add(TreeEvery+time.Second)))
	if got := s.Snapshot().Process.User; got != "4343" {
		t.Errorf("after a walk, user = %q, want 4343", got)
	}
}
