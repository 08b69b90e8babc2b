package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/pystack"
)

// startPython runs Debian's python3 with args (under prefix, such as
// setpriv), killed when t ends.
func startPython(t *testing.T, prefix []string, args ...string) *exec.Cmd {
	t.Helper()
	argv := append(append(append([]string{}, prefix...), debPython), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestStacksCommand runs pipetop stacks on the stack reader's parked
// script under Debian's python3: the text names every thread, the
// spinning thread's hot function with the GIL, and the parked threads'
// functions; --json says the same.
func TestStacksCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python: skipped in -short mode")
	}
	bin := pipetopBin(t)
	dump := filepath.Join(t.TempDir(), "dump.json")
	cmd := startPython(t, nil, "../../metrics/pystack/testdata/parked.py", dump)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(dump); err == nil {
			break
		}
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	out, errs, code := runBin(t, nil, nil, bin, "stacks", pid)
	if code != 0 {
		t.Fatalf("pipetop stacks %s: status %d: %s", pid, code, errs)
	}
	for _, want := range []string{"Process " + pid + ": CPython 3.11", "\nThread " + pid + " ", " (holds the GIL), Python id 0x",
		"    hot_spin (", "    wait_here (", "    Holder.park (", "    sleeper (", "    idle (", "parked.py:"} {
		if !strings.Contains(out, want) {
			t.Errorf("pipetop stacks lacks %q:\n%s", want, out)
		}
	}
	out, errs, code = runBin(t, nil, nil, bin, "stacks", "--json", pid)
	var d pystack.Dump
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("pipetop stacks --json: status %d, %v: %s%s", code, err, errs, out)
	}
	holders := 0
	for _, th := range d.Threads {
		if th.HoldsGIL {
			holders++
			if len(th.Frames) == 0 || th.Frames[0].Name != "hot_spin" {
				t.Errorf("the GIL holder is at %v", th.Frames)
			}
		}
	}
	if d.PID != cmd.Process.Pid || len(d.Threads) != 5 || holders != 1 {
		t.Errorf("--json: pid %d, %d threads, %d GIL holders: %s", d.PID, len(d.Threads), holders, out)
	}
}

// TestStacksRefused: pipetop stacks on what it may not or cannot read
// says why, with the fix where there is one.
func TestStacksRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python: skipped in -short mode")
	}
	bin := pipetopBin(t)
	_, setprivErr := exec.LookPath("setpriv")
	asNobody := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
	noPtrace := []string{"setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"}
	idle := []string{"-c", "import time; time.sleep(60)"}
	cases := []struct {
		name     string
		root     bool     // needs root and setpriv
		target   []string // how the target runs: nil for no target
		reader   []string // how pipetop runs
		pid      string
		code     int
		want     string
		notPyArg bool
	}{
		{name: "another user's process", root: true, target: []string{}, reader: asNobody, code: 1,
			want: "belongs to user root (uid 0) and pipetop runs as user nobody (uid 65534): reading another user's process needs root"},
		{name: "root without CAP_SYS_PTRACE", root: true, target: asNobody, reader: noPtrace, code: 1,
			want: "pipetop runs without CAP_SYS_PTRACE, as in a container that drops it (docker run --cap-add=SYS_PTRACE"},
		{name: "not Python", notPyArg: true, code: 1, want: "not a Python process: neither"},
		{name: "no such process", pid: "99999999", code: 1, want: "pipetop: stacks: pid 99999999: no such process"},
		{name: "not a pid", pid: "train.py", code: 2, want: `stacks: "train.py" is not a process id`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root && (os.Geteuid() != 0 || setprivErr != nil) {
				t.Skip("needs root and setpriv to run a process as another user")
			}
			pid := c.pid
			switch {
			case c.target != nil:
				pid = strconv.Itoa(startPython(t, c.target, idle...).Process.Pid)
				time.Sleep(300 * time.Millisecond) // past setpriv's exec of python
			case c.notPyArg:
				sleep := exec.Command("sleep", "60")
				if err := sleep.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
				pid = strconv.Itoa(sleep.Process.Pid)
			}
			_, errs, code := runBin(t, nil, c.reader, bin, "stacks", pid)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("status %d, stderr %q; want status %d saying %q", code, errs, c.code, c.want)
			}
		})
	}
}

// TestAttachUninstrumented attaches pipetop to Python processes that run
// no instrumentation (live: their stacks are read from outside as they
// run): the hot code pane names a stdlib script's hot function, read from
// outside; a process that is not Python is refused with the reason.
func TestAttachUninstrumented(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python: skipped in -short mode")
	}
	bin := pipetopBin(t)
	script := filepath.Join(t.TempDir(), "spin.py")
	if err := os.WriteFile(script, []byte("def hot_function():\n    while True:\n        sum(range(300))\n\n\nhot_function()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	for _, c := range []struct {
		name, pid string
		code      int
		want      []string
	}{
		{"python", strconv.Itoa(startPython(t, nil, script).Process.Pid), 0,
			[]string{"hot code · training thread in other", "in `hot_function` at " + script + ":3"}},
		{"not python", strconv.Itoa(sleep.Process.Pid), 1, []string{"not a Python process"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			time.Sleep(200 * time.Millisecond) // past the interpreter's start
			// 3 s of stack samples: enough for the hot code on a loaded box.
			out, errs, code := runBin(t, []string{"PIPETOP_SOCKET_DIR=" + t.TempDir()}, nil, bin, "attach", c.pid, "--once", "--no-gpu", "--interval", "3s")
			if code != c.code {
				t.Fatalf("pipetop attach %s --once: status %d, want %d; stderr: %s\n%s", c.pid, code, c.code, errs, out)
			}
			for _, want := range c.want {
				if !strings.Contains(out+errs, want) {
					t.Errorf("pipetop attach %s --once lacks %q:\n%s%s", c.pid, want, out, errs)
				}
			}
		})
	}
}
