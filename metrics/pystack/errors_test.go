package pystack

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// startIdle runs exe with args, killed when t ends, and waits for the
// first line it prints; its pid.
func startIdle(t *testing.T, exe string, args ...string) int {
	t.Helper()
	cmd := exec.Command(exe, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("%s printed nothing: %v", exe, err)
	}
	return cmd.Process.Pid
}

// TestAttachErrors attaches to what is no CPython pipetop reads: each
// error says why, naming the version where there is one.
func TestAttachErrors(t *testing.T) {
	home, _ := os.UserHomeDir()
	old := func(v string) string {
		found, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", v+".*", "bin", "python"+v))
		if len(found) == 0 {
			return ""
		}
		return found[0]
	}
	idle := []string{"-c", "import time; print('ready'); import sys; sys.stdout.flush(); time.sleep(60)"}
	cases := []struct {
		name string
		exe  string
		args []string
		pid  int
		want string
		is   error
	}{
		{name: "sleep", exe: "sh", args: []string{"-c", "echo; exec sleep 60"}, want: "not a Python process: neither", is: ErrNotPython},
		{name: "no such pid", pid: 99999999, want: "pid 99999999: no such process"},
		{name: "negative pid", pid: -4, want: "pid -4: no such process"},
		{name: "CPython 3.9", exe: old("3.9"), args: idle,
			want: "runs CPython 3.9 which pipetop cannot read (it reads 3.10 to 3.13)"},
		{name: "CPython 2.7", exe: old("2.7"), args: idle,
			want: "runs CPython 2.7, without the _PyRuntime of 3.7 and later, which pipetop cannot read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pid := c.pid
			if c.args != nil {
				if c.exe == "" {
					t.Skip("not installed here")
				}
				pid = startIdle(t, c.exe, c.args...)
			}
			p, err := Attach(pid)
			if err == nil {
				p.Close()
				t.Fatalf("attached to %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to say %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
		})
	}
}

// TestDebugOffsetsMatchTable reads a live 3.13's _Py_DebugOffsets: every
// field it covers equals the table's.
func TestDebugOffsetsMatchTable(t *testing.T) {
	py := pythons()[4]
	py.need(t)
	want := startParked(t, py.exe)
	p, err := Attach(want.PID)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d, err := readDebugOffsets(p.mem, p.runtime)
	if err != nil {
		t.Fatal(err)
	}
	if got := versionFromHex(uint32(d.Version)); got != p.Version() {
		t.Errorf("debug offsets of %v, Py_Version %v", got, p.Version())
	}
	lay := layouts[13]
	if differ := d.apply(&lay); len(differ) > 0 {
		t.Errorf("the table differs from CPython %v's own offsets: %s", p.Version(), strings.Join(differ, "; "))
	}
}

// TestReadExited: a process that exits after Attach gives ErrExited.
func TestReadExited(t *testing.T) {
	py := pythons()[1]
	py.need(t)
	cmd := exec.Command(py.exe, "-c", "import sys, time; print('ready'); sys.stdout.flush(); time.sleep(60)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	p, err := Attach(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Threads(); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := p.Threads(); !errors.Is(err, ErrExited) {
		t.Errorf("a read after the process exited: %v, want ErrExited", err)
	}
}
