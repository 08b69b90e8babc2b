package child

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// start starts sh -c script as a Process; the Process is closed when the
// test ends.
func start(t *testing.T, script string, opts Options) *Process {
	t.Helper()
	p, err := Start(exec.Command("sh", "-c", script), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestWaitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		got, err := start(t, tc.script, Options{}).Wait()
		if err != nil || got != tc.want {
			t.Errorf("sh -c %q: status %d, %v; want %d", tc.script, got, err, tc.want)
		}
	}
	if s := status(errors.New("wait: no child processes")); s != -1 {
		t.Errorf("status of an error that is no exit = %d, want -1", s)
	}
}

func TestStartFails(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/pipetop-child-test"), Options{}); err == nil {
		t.Fatal("Start of a missing command: no error")
	}
}

// trapped starts a shell that exits 2 on SIGINT, 10 on SIGUSR1, and 99
// after 30 s, and returns once its traps are set.
func trapped(t *testing.T, opts Options) *Process {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("sh", "-c", `trap 'exit 2' INT; trap 'exit 10' USR1; echo ready; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; exit 99`)
	cmd.Stdout = w
	p, err := Start(cmd, opts)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return p
}

// raise sends s to the test's own process, which the Process catches.
func raise(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), s); err != nil {
		t.Fatal(err)
	}
}

func TestForward(t *testing.T) {
	p := trapped(t, Options{})
	raise(t, syscall.SIGINT)
	if got, err := p.Wait(); got != 2 || err != nil {
		t.Errorf("after SIGINT without a terminal: status %d, %v; want 2 (forwarded)", got, err)
	}
}

// TestForwardTerminal: with a terminal, SIGINT typed there reaches the
// command directly, so pipetop does not send it again; other signals it
// forwards.
func TestForwardTerminal(t *testing.T) {
	p := trapped(t, Options{Terminal: true})
	raise(t, syscall.SIGINT)
	time.Sleep(100 * time.Millisecond) // caught and passed over before the next
	select {
	case <-p.Exited():
		t.Fatal("the command exited on a SIGINT sent to pipetop alone")
	default:
	}
	raise(t, syscall.SIGUSR1)
	if got, err := p.Wait(); got != 10 || err != nil {
		t.Errorf("after SIGINT and SIGUSR1 with a terminal: status %d, %v; want 10 (only SIGUSR1 forwarded)", got, err)
	}
}

// Stop ends a whole group: SIGINT when the command takes it; SIGTERM, then
// SIGKILL, when it ignores the milder ones; and a member that outlived the
// leader is killed too.
func TestStopGroup(t *testing.T) {
	for _, tc := range []struct {
		name, trap, script string
		want               os.Signal
	}{
		{"takes SIGINT", ":", "sleep 30 & wait", syscall.SIGINT},
		{"ignores SIGINT", "trap '' INT", "sleep 30 & wait", syscall.SIGTERM},
		{"ignores SIGINT and SIGTERM", "trap '' INT TERM", "while :; do sleep 0.05; done", syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The leader sets its traps before it starts the member, so the
			// member's pid says both are ready. The member writes its pid,
			// then ignores every signal it can.
			script := tc.trap + `; sh -c 'trap "" INT TERM HUP; echo $$ >` + dir + `/pid; exec sleep 60' & ` + tc.script
			p := start(t, script, Options{Group: true})
			member := waitPid(t, dir+"/pid")
			if got := p.Stop(100 * time.Millisecond); got != tc.want {
				t.Errorf("last signal %v, want %v", got, tc.want)
			}
			deadline := time.Now().Add(2 * time.Second)
			for syscall.Kill(member, 0) == nil && !zombie(member) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if syscall.Kill(member, 0) == nil && !zombie(member) {
				t.Errorf("group member %d outlived Stop", member)
			}
		})
	}
	p := start(t, "exit 0", Options{Group: true})
	p.Wait()
	if got := p.Stop(time.Second); got != nil {
		t.Errorf("Stop of an exited command sent %v", got)
	}
}

// waitPid reads the pid a script writes to path.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(path)
		var pid int
		if err == nil && len(b) > 1 {
			if _, err := fmt.Sscanf(string(b), "%d", &pid); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// zombie is whether pid has exited and waits for its parent to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || strings.Contains(string(b), ") Z ")
}
