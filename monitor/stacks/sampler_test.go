package stacks

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
)

// startStaged runs testdata/staged.py under python (a real CPython that
// sets up its stage word) with args and returns its hello as the publisher would
// send it.
func startStaged(t testing.TB, python string, args ...string) ipc.Hello {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s: %v", python, err)
	}
	root := testkit.Root(t)
	cmd := exec.Command(python, append([]string{"staged.py"}, args...)...)
	cmd.Dir = filepath.Join(root, "monitor", "stacks", "testdata")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "clients", "python"),
		"PIPETOP_STACKS_READER="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("staged.py said nothing: %v", err)
	}
	var said struct {
		Word *ipc.StageWord `json:"word"`
		TID  int            `json:"tid"`
		PID  int            `json:"pid"`
	}
	if err := json.Unmarshal([]byte(line), &said); err != nil || said.Word == nil {
		t.Fatalf("staged.py said %q: %v", line, err)
	}
	return ipc.Hello{Role: "trainer", PID: said.PID, TID: said.TID, StageWord: said.Word}
}

// TestOutside reads a live CPython (3.10 to 3.13) from outside (it must be live: the
// point is the read of another process's memory): the training thread's
// samples carry the stage its stage word names and name its hot function;
// the forked child's, in a fetch a second old against a 1 µs median, are
// a worker's slow fetch.
func TestOutside(t *testing.T) {
	testkit.Concurrent(t)
	for _, python := range []string{"/usr/bin/python3", "/root/.pyenv/versions/3.10.13/bin/python3", "/root/.pyenv/versions/3.12.1/bin/python3", "/root/.pyenv/versions/3.13.0/bin/python3"} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(python))), func(t *testing.T) {
			h := startStaged(t, python)
			got := make(chan *stage.StackSamples, 16)
			var s *Sampler
			var err error
			for try := 0; try < 50; try++ { // the worker may not have forked yet: its frames come later anyway
				if s, err = Start(h, h.PID, 200, func(ss *stage.StackSamples) { got <- ss }); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			var train, worker bool
			deadline := time.After(10 * time.Second)
			for !train || !worker {
				select {
				case ss := <-got:
					if err := ss.Validate(); err != nil {
						t.Fatal(err)
					}
					for _, r := range ss.Rows {
						top := ss.Frames[r.Stack[len(r.Stack)-1]]
						switch {
						case r.Role == stage.RoleTrain && r.Stage == "forward" && top.Name == "hot_function" && top.File == "staged.py":
							train = true
						case r.Role == stage.RoleWorker && r.Worker != nil && *r.Worker == 0 && r.Stage == stage.SlowFetch && top.Name == "fetch_hot":
							worker = true
						}
					}
				case <-deadline:
					t.Fatalf("no sample of the training thread in hot_function (%v) or of the worker in fetch_hot (%v)", train, worker)
				}
			}
		})
	}
}

// TestStopsWhenTheTrainerSamplesItself: a trainer whose stage word says
// it samples its own stacks (another viewer was refused the read) is no
// longer read from outside, so that a viewer that gets its frames does
// not count a sample twice: the sampler hands over what it has and stops.
func TestStopsWhenTheTrainerSamplesItself(t *testing.T) {
	testkit.Concurrent(t)
	h := startStaged(t, "/usr/bin/python3", "--inside-after", "1")
	got := make(chan *stage.StackSamples, 16)
	s, err := Start(h, h.PID, 100, func(ss *stage.StackSamples) { got <- ss })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the sampler still reads the trainer 9 s after it began to sample its own stacks")
	}
	var n int64
	for len(got) > 0 {
		ss := <-got
		m, _ := ss.Samples()
		n += m
	}
	if n == 0 {
		t.Error("no samples from the second before the trainer sampled its own")
	}
	if pid := h.PID; syscall.Kill(pid, 0) != nil {
		t.Errorf("the trainer %d exited: the sampler stopped for that, not for the stage word", pid)
	}
}

// TestRefused: the test fake refuses as the kernel would, with the reason.
func TestRefused(t *testing.T) {
	t.Setenv(RefuseEnv, "ptrace_scope 3")
	_, err := Start(ipc.Hello{PID: os.Getpid(), StageWord: &ipc.StageWord{Addr: 8}}, os.Getpid(), 100, func(*stage.StackSamples) {})
	if err == nil || !strings.Contains(err.Error(), "ptrace_scope 3") {
		t.Fatalf("Start with %s set: %v, want the reason", RefuseEnv, err)
	}
}

func TestHz(t *testing.T) {
	for _, c := range []struct {
		env  string
		want float64
	}{{"", DefaultHz}, {"50", 50}, {"0", 0}, {"-3", DefaultHz}, {"x", DefaultHz}, {"5000", maxHz}, {"NaN", DefaultHz}} {
		if got := Hz(func(string) string { return c.env }); got != c.want {
			t.Errorf("Hz(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}
