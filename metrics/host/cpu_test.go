package host

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	"golang.org/x/sys/unix"

	"github.com/pipetop/pipetop/metrics"
)

// TestCPUSamplerRealProc drives the sampler through this machine's /proc and
// cross-checks core count and memory against gopsutil.
func TestCPUSamplerRealProc(t *testing.T) {
	s := NewCPUSampler("")
	if s.Name() != "cpu" {
		t.Fatalf("Name = %q", s.Name())
	}
	t0 := time.Now()
	if err := s.Sample(t0); err != nil {
		t.Fatalf("first sample: %v", err)
	}
	first := s.Snapshot()
	if first.Total.State != metrics.Missing {
		t.Fatalf("first Total state = %v, want missing (rates need two samples)", first.Total.State)
	}
	n, err := cpu.Counts(true)
	if err != nil {
		t.Fatalf("gopsutil cpu.Counts: %v", err)
	}
	if len(first.Cores) < n {
		t.Fatalf("got %d cores, gopsutil counts %d", len(first.Cores), n)
	}
	vm, err := mem.VirtualMemory()
	if err != nil {
		t.Fatalf("gopsutil mem.VirtualMemory: %v", err)
	}
	if got := first.MemTotal; !got.Valid() || uint64(got.V) != vm.Total || got.Source != SourceProcMeminfo {
		t.Fatalf("MemTotal = %+v, gopsutil says %d", got, vm.Total)
	}
	if !first.Load1.Valid() || first.Load1.V < 0 {
		t.Fatalf("Load1 = %+v", first.Load1)
	}
	if !first.SwapTotal.Valid() || first.SwapUsed.V > first.SwapTotal.V {
		t.Fatalf("swap used %v > total %v", first.SwapUsed, first.SwapTotal)
	}
}

// TestCPUSamplerSeesBusyCore pins a spinning goroutine to one core and
// expects that core to read mostly busy.
func TestCPUSamplerSeesBusyCore(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatalf("sched_getaffinity: %v", err)
	}
	core := -1
	for i := range 1024 {
		if set.IsSet(i) {
			core = i
		}
	}
	var stop atomic.Bool
	pinned := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var one unix.CPUSet
		one.Set(core)
		pinned <- unix.SchedSetaffinity(0, &one)
		for !stop.Load() {
		}
	}()
	if err := <-pinned; err != nil {
		t.Fatalf("pin to core %d: %v", core, err)
	}
	defer stop.Store(true)
	s := NewCPUSampler("")
	now := time.Now()
	if err := s.Sample(now); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := s.Sample(now.Add(400 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	got := snap.Cores[core]
	if !got.Valid() || got.V < 50 {
		t.Fatalf("core %d busy = %+v with a spinning thread pinned to it, want >= 50%%", core, got)
	}
	if !snap.Total.Valid() || snap.Total.V <= 0 || snap.Total.V > 100 {
		t.Fatalf("Total = %+v", snap.Total)
	}
}

// TestCPUSamplerFixtures runs the sampler over fixed procfs trees.
func TestCPUSamplerFixtures(t *testing.T) {
	tests := []struct {
		name      string
		stat1     string
		stat2     string
		wantCores []metrics.Value
		wantTotal metrics.Value
	}{
		{
			name:      "two cores half and fully busy",
			stat1:     "cpu  100 0 100 200 0 0 0 0 0 0\ncpu0 50 0 50 100 0 0 0 0 0 0\ncpu1 50 0 50 100 0 0 0 0 0 0\n",
			stat2:     "cpu  250 0 250 300 0 0 0 0 0 0\ncpu0 100 0 100 200 0 0 0 0 0 0\ncpu1 150 0 150 100 0 0 0 0 0 0\n",
			wantCores: []metrics.Value{metrics.Of(50, SourceProcStat), metrics.Of(100, SourceProcStat)},
			wantTotal: metrics.Of(75, SourceProcStat),
		},
		{
			name:      "iowait counts as idle",
			stat1:     "cpu  0 0 0 0 0\ncpu0 0 0 0 0 0\n",
			stat2:     "cpu  10 0 0 40 50\ncpu0 10 0 0 40 50\n",
			wantCores: []metrics.Value{metrics.Of(10, SourceProcStat)},
			wantTotal: metrics.Of(10, SourceProcStat),
		},
		{
			name:  "core goes offline",
			stat1: "cpu  0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n",
			stat2: "cpu  10 0 0 10\ncpu0 10 0 0 10\n",
			wantCores: []metrics.Value{
				metrics.Of(50, SourceProcStat), metrics.Unsupported(SourceProcStat),
			},
			wantTotal: metrics.Of(50, SourceProcStat),
		},
		{
			name:  "core comes online",
			stat1: "cpu  0 0 0 0\ncpu0 0 0 0 0\n",
			stat2: "cpu  10 0 0 10\ncpu0 10 0 0 10\ncpu1 5 0 0 5\n",
			wantCores: []metrics.Value{
				metrics.Of(50, SourceProcStat), metrics.Pending(SourceProcStat),
			},
			wantTotal: metrics.Of(50, SourceProcStat),
		},
		{
			name:      "counters unchanged",
			stat1:     "cpu  1 1 1 1\ncpu0 1 1 1 1\n",
			stat2:     "cpu  1 1 1 1\ncpu0 1 1 1 1\n",
			wantCores: []metrics.Value{metrics.Pending(SourceProcStat)},
			wantTotal: metrics.Pending(SourceProcStat),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeProc(t, tt.stat1)
			s := NewCPUSampler(root)
			if err := s.Sample(time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(root, "stat"), tt.stat2)
			if err := s.Sample(time.Unix(1, 0)); err != nil {
				t.Fatal(err)
			}
			snap := s.Snapshot()
			if len(snap.Cores) != len(tt.wantCores) {
				t.Fatalf("cores = %+v, want %+v", snap.Cores, tt.wantCores)
			}
			for i, want := range tt.wantCores {
				if !sameValue(snap.Cores[i], want) {
					t.Errorf("core %d = %+v, want %+v", i, snap.Cores[i], want)
				}
			}
			if !sameValue(snap.Total, tt.wantTotal) {
				t.Errorf("Total = %+v, want %+v", snap.Total, tt.wantTotal)
			}
			if snap.Load5.V != 0.5 || snap.MemUsed.V != 3<<20 || snap.SwapUsed.V != 1<<20 {
				t.Errorf("load5 %v memUsed %v swapUsed %v", snap.Load5, snap.MemUsed, snap.SwapUsed)
			}
		})
	}
}

func TestCPUSamplerErrors(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		meminfo string
		wantErr string
	}{
		{"missing stat", "", "", "stat: no such file"},
		{"garbage stat", "cpu  x y z\n", "", `/proc/stat line "cpu": column 1 "x" is not a number`},
		{"no core lines", "cpu  1 2 3 4\nintr 5\n", "", "no cpuN lines"},
		{"bad meminfo", "cpu  1 2 3 4\ncpu0 1 2 3 4\n", "MemTotal: lots kB\n", `/proc/meminfo MemTotal: bad value "lots"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeProc(t, tt.stat)
			if tt.stat == "" {
				os.Remove(filepath.Join(root, "stat"))
			}
			if tt.meminfo != "" {
				writeFile(t, filepath.Join(root, "meminfo"), tt.meminfo)
			}
			err := NewCPUSampler(root).Sample(time.Now())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func sameValue(a, b metrics.Value) bool {
	return a.State == b.State && a.Source == b.Source && math.Abs(a.V-b.V) < 1e-9
}

// writeProc makes a procfs-like directory with the given stat and fixed
// loadavg and meminfo files.
func writeProc(t *testing.T, stat string) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "stat"), stat)
	writeFile(t, filepath.Join(root, "loadavg"), "0.25 0.50 1.00 2/300 4242\n")
	writeFile(t, filepath.Join(root, "meminfo"),
		"MemTotal:        8192 kB\nMemFree: 1024 kB\nMemAvailable:    5120 kB\nSwapTotal: 2048 kB\nSwapFree: 1024 kB\n")
	return root
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
