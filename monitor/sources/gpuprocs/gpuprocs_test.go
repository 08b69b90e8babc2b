package gpuprocs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics"
	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// fakeGPUs is a FAKE GPU sampler reading (metrics/gpu tests the NVML side
// with go-nvml's mock): 8 GPUs, GPU 3 in MIG mode, 30 processes of three
// users, GPU 5's driver refusing per-process utilisation, pid 1029 gone
// from /proc by the time it is read, GPU 7's memory hidden.
type fakeGPUs struct{}

func (fakeGPUs) Snapshot() mgpu.Snapshot {
	var s mgpu.Snapshot
	for i := range 8 {
		d := mgpu.Device{Index: i, MIGIndex: -1, Name: "NVIDIA H100", ProcList: metrics.OK, ProcUtil: metrics.OK,
			Readings: [gpumetric.N]metrics.Value{gpumetric.MemUsed: metrics.Of(40<<30, mgpu.SourceNVML)}}
		if i == 5 {
			d.ProcUtil = metrics.NotSupported
		}
		for p := i; p < 30; p += 8 {
			r := mgpu.RunningProcess{PID: 1000 + p, MIGIndex: -1, Compute: true,
				Memory: metrics.Of(float64(p+1)*(1<<28), mgpu.SourceProcessList),
				SMUtil: metrics.Of(float64(p), mgpu.SourceProcessUtil), MemUtil: metrics.Of(1, mgpu.SourceProcessUtil)}
			if i == 3 {
				r.MIGIndex = p % 2
			}
			if i == 5 {
				r.SMUtil, r.MemUtil = metrics.Unsupported(mgpu.SourceProcessUtil), metrics.Unsupported(mgpu.SourceProcessUtil)
			}
			if i == 7 {
				r.Memory = metrics.Unsupported(mgpu.SourceProcessList)
			}
			d.Running = append(d.Running, r)
		}
		s.Devices = append(s.Devices, d)
		if i == 3 {
			s.Devices = append(s.Devices, mgpu.Device{Index: 3, MIG: true, MIGIndex: 0}, mgpu.Device{Index: 3, MIG: true, MIGIndex: 1})
		}
	}
	return s
}

// procfs writes a FAKE procfs with the 30 processes, owned by uids 1000,
// 1001 and 1002 in turn; 1029 has exited (its directory is gone) and 1028
// exits between its stat and status reads; 1004 lives in a container.
func procfs(t *testing.T) string {
	root := t.TempDir()
	write := func(name, body string) {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("uptime", "5000.00 1.00\n")
	for p := range 29 {
		pid := 1000 + p
		write(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (train%d) S 1 0 0 0 0 0 0 0 0 0 %d 0 0 0 0 0 4 0 100 0 %d\n", pid, p, 10*p, 1000*(p+1)))
		if p == 28 {
			continue
		}
		nspid := fmt.Sprint(pid)
		if p == 4 {
			nspid += "\t12"
		}
		write(fmt.Sprintf("%d/status", pid), fmt.Sprintf("Uid:\t%d\t0\t0\t0\nNSpid:\t%s\n", 1000+p%3, nspid))
		write(fmt.Sprintf("%d/cmdline", pid), fmt.Sprintf("python\x00train.py\x00--job\x00%d\x00", p))
	}
	return root
}

func sample(t *testing.T, root bool) (*Source, *snapshot.Snapshot) {
	t.Helper()
	s := New(fakeGPUs{}, host.NewPIDReader(procfs(t)), root)
	if err := s.Sample(time.Unix(100, 0), source.Target{}); err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{Trainer: &snapshot.Trainer{HostPID: 1010},
		Process: &snapshot.Process{Alive: true, Self: snapshot.Proc{PID: 1010}, Children: []snapshot.Proc{{PID: 1011}}}}
	s.Fill(snap)
	return s, snap
}

func TestJoinEightGPUsThirtyProcesses(t *testing.T) {
	_, snap := sample(t, false)
	ps := snap.GPUProcesses
	if len(ps) != 30 {
		t.Fatalf("%d processes, want 30", len(ps))
	}
	users := map[string]int{}
	byPID := map[int]snapshot.GPUProcess{}
	for i, p := range ps {
		users[p.User]++
		byPID[p.HostPID] = p
		if i > 0 && ps[i-1].GPUMem.Or(-1) < p.GPUMem.Or(-1) {
			t.Errorf("row %d (%d) has more GPU memory than row %d: not sorted by memory", i, p.HostPID, i-1)
		}
	}
	if len(users) < 3 {
		t.Errorf("users = %v, want processes of three users", users)
	}
	p := byPID[1012]
	if p.GPU != 4 || p.User == "" || p.Command != "python train.py --job 12" || p.Comm != "train12" || p.Type != "compute" ||
		!p.RSS.OK() || *p.RSS.Value != 13000*float64(os.Getpagesize()) || !p.Age.OK() || !p.SM.OK() || *p.SM.Value != 12 {
		t.Errorf("pid 1012 = %+v", p)
	}
	if c := byPID[1004]; c.PID != 12 || c.HostPID != 1004 {
		t.Errorf("container process: pid %d host pid %d, want 12 and 1004", c.PID, c.HostPID)
	}
	if m := byPID[1011]; m.GPU != 3 || m.MIGIndex != 1 || !m.Trainer {
		t.Errorf("pid 1011 = GPU %d MIG %d trainer %v, want GPU 3 MIG 1 of the trainer", m.GPU, m.MIGIndex, m.Trainer)
	}
	if r := byPID[1013]; r.GPU != 5 || r.SM.OK() || r.SM.State != "not supported" || r.User == "" {
		t.Errorf("process on the GPU refusing utilisation = %+v", r)
	}
	for pid, vis := range map[int]string{1028: "exited", 1029: "not visible"} {
		g := byPID[pid]
		if g.Visibility != vis || g.User != "" || g.CPU.OK() || g.RSS.OK() || !g.GPUMem.OK() {
			t.Errorf("pid %d = %+v, want %s, no /proc values, NVML memory kept", pid, g, vis)
		}
	}
	notes := strings.Join(snap.GPUProcessNotes, "\n")
	for _, want := range []string{"hides the GPU memory of 3 process(es)", "1 GPU process(es) not visible here"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
}

// TestHiddenByDriverNote: a GPU with memory in use and an empty list is
// labelled as hidden for a non-root viewer, and not for root.
func TestHiddenByDriverNote(t *testing.T) {
	snap := mgpu.Snapshot{Devices: []mgpu.Device{{Index: 0, MIGIndex: -1, ProcList: metrics.OK,
		Readings: [gpumetric.N]metrics.Value{gpumetric.MemUsed: metrics.Of(30<<30, mgpu.SourceNVML)}},
		{Index: 1, MIGIndex: -1, ProcList: metrics.Failed}}}
	for _, root := range []bool{false, true} {
		n := strings.Join(notes(snap, nil, root), "\n")
		hidden := strings.Contains(n, "GPU 0: 30.0 GiB in use but no process listed")
		if hidden == root {
			t.Errorf("root=%v: notes %q", root, n)
		}
		if !strings.Contains(n, "GPU 1: the driver refused the process list") {
			t.Errorf("root=%v: notes %q lack the refusal", root, n)
		}
	}
}
