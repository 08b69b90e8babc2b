package host

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics"
)

// TestPIDReaderRealChild reads a real child process: user, command line,
// age, RSS, and CPU % from the second read on.
func TestPIDReaderRealChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := NewPIDReader("")
	now := time.Now()
	p := r.Read(now, []int{cmd.Process.Pid})[0]
	// Right after fork the child may not have exec'd sleep yet.
	for deadline := time.Now().Add(5 * time.Second); (p.Cmdline != "sleep 30" || p.RSS.V <= 0) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		r = NewPIDReader("")
		p = r.Read(now, []int{cmd.Process.Pid})[0]
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if p.Vis != Visible || p.UID != os.Getuid() || p.User != me.Username || p.Cmdline != "sleep 30" || p.Comm != "sleep" {
		t.Fatalf("child = %+v", p)
	}
	if p.NSPID != cmd.Process.Pid {
		t.Errorf("NSPID = %d outside a new namespace, want the pid %d", p.NSPID, cmd.Process.Pid)
	}
	if !p.RSS.Valid() || p.RSS.V <= 0 || !p.Age.Valid() || p.Age.V > 60 {
		t.Errorf("RSS %+v, age %+v", p.RSS, p.Age)
	}
	if p.CPU.State != metrics.Missing {
		t.Errorf("first CPU = %+v, want pending", p.CPU)
	}
	p = r.Read(now.Add(time.Second), []int{cmd.Process.Pid})[0]
	if !p.CPU.Valid() || p.CPU.V > 5 {
		t.Errorf("CPU of a sleeping process = %+v", p.CPU)
	}
}

// fakeProcFS writes a procfs tree: files maps "PID/file" to content.
func fakeProcFS(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func statLine(pid int, comm string) string {
	// pid (comm) state ppid ... utime(14) stime(15) ... threads(20) ... starttime(22) vsize(23) rss(24)
	f := []string{strconv.Itoa(pid), "(" + comm + ")", "S", "1"}
	for n := 5; n <= 24; n++ {
		v := "0"
		switch n {
		case 14:
			v = "150"
		case 15:
			v = "50"
		case 20:
			v = "3"
		case 22:
			v = "1000"
		case 24:
			v = "256"
		}
		f = append(f, v)
	}
	return strings.Join(f, " ") + "\n"
}

// TestPIDReaderFakeProcFS covers what a real machine rarely shows on
// demand: a container's process (NSpid), a pid not visible here, a process
// that exits between its stat and status reads, a kernel thread.
func TestPIDReaderFakeProcFS(t *testing.T) {
	root := fakeProcFS(t, map[string]string{
		"uptime":       "100.50 10.00\n",
		"4242/stat":    statLine(4242, "python3"),
		"4242/status":  "Name:\tpython3\nUid:\t1001\t1001\t1001\t1001\nNSpid:\t4242\t7\n",
		"4242/cmdline": "python3\x00train.py\x00--bs\x0064\x00",
		"5000/stat":    statLine(5000, "gone"), // no status: exited between the reads
		"6000/stat":    statLine(6000, "kworker/0:1"),
		"6000/status":  "Uid:\t0\t0\t0\t0\n",
		"6000/cmdline": "",
	})
	r := NewPIDReader(root)
	got := r.Read(time.Unix(100, 0), []int{4242, 5000, 6000, 9999})
	c := got[0]
	if c.Vis != Visible || c.PID != 4242 || c.NSPID != 7 || c.UID != 1001 || c.Cmdline != "python3 train.py --bs 64" {
		t.Errorf("container process = %+v", c)
	}
	if want := 100.5 - 1000/r.ticks; c.Age != metrics.Of(want, SourceProcUptime) {
		t.Errorf("age = %+v, want %v s", c.Age, want)
	}
	if c.RSS != metrics.Of(256*r.page, SourceProcPIDStat) {
		t.Errorf("RSS = %+v", c.RSS)
	}
	if g := got[1]; g.Vis != Exited || g.CPU.Valid() || g.RSS.Valid() || g.Comm != "gone" {
		t.Errorf("exited process = %+v", g)
	}
	if k := got[2]; k.Vis != Visible || k.Cmdline != "[kworker/0:1]" || k.UID != 0 {
		t.Errorf("kernel thread = %+v", k)
	}
	if h := got[3]; h.Vis != Hidden || h.UID != -1 || h.User != "" || h.RSS.Valid() {
		t.Errorf("hidden pid = %+v", h)
	}
	if Hidden.String() != "not visible" || Exited.String() != "exited" || Visible.String() != "visible" {
		t.Error("visibility names changed")
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("Uid:\t1000\t1000\t1000\t1000\nNSpid:\t12\t3\n"))
	f.Add([]byte("Uid:\nNSpid:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		uid, nspid, ok := parseStatus(b)
		if ok && (uid < 0 || nspid < 0) {
			t.Fatalf("ok with uid %d nspid %d", uid, nspid)
		}
	})
}
