package child

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// said collects what Settle says.
type said struct {
	mu    sync.Mutex
	lines []string
}

func (s *said) say(format string, args ...any) {
	s.mu.Lock()
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *said) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// gone is whether pid has exited and was waited for.
func gone(pid int) bool { return syscall.Kill(pid, 0) != nil }

// After a Ctrl-C the command exits and leaves a process that ignores
// SIGINT running (torch.multiprocessing.spawn's ranks): Settle stops it
// with SIGTERM and waits for it, and says so.
func TestSettleStopsWhatIsLeftAfterCtrlC(t *testing.T) {
	if err := Adopt(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `sh -c 'trap "" INT; echo $$ >` + dir + `/pid; exec sleep 60' & trap 'exit 2' INT; while :; do sleep 0.05; done`
	p := start(t, script, Options{})
	member := waitPid(t, dir+"/pid")
	raise(t, syscall.SIGINT)
	if got, _ := p.Wait(); got != 2 {
		t.Fatalf("command status %d, want 2", got)
	}
	var s said
	begin := time.Now()
	p.Settle(200*time.Millisecond, s.say)
	if !gone(member) {
		t.Errorf("pid %d is still there after Settle", member)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("Settle took %v", took)
	}
	if !strings.Contains(s.String(), "left 1 process (pid "+fmt.Sprint(member)+": sleep) running: stopping them") {
		t.Errorf("Settle said %q", s.String())
	}
}

// SIGINT without a terminal reaches the command's descendants too, as a
// Ctrl-C at a terminal does: ranks that take it stop by themselves.
func TestForwardReachesDescendants(t *testing.T) {
	if err := Adopt(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `sh -c 'echo $$ >` + dir + `/pid; trap "exit 3" INT; while :; do sleep 0.05; done' & wait`
	p := start(t, script, Options{})
	member := waitPid(t, dir+"/pid")
	raise(t, syscall.SIGINT)
	p.Wait()
	var s said
	p.Settle(5*time.Second, s.say)
	if !gone(member) {
		t.Errorf("pid %d is still there", member)
	}
}

// A command that exits by itself leaving a process running for a while:
// Settle says so and waits for it.
func TestSettleWaitsForWhatIsLeft(t *testing.T) {
	if err := Adopt(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := start(t, `sh -c 'echo $$ >`+dir+`/pid; sleep 1.6' & sleep 0.1; exit 0`, Options{})
	member := waitPid(t, dir+"/pid")
	p.Wait()
	var s said
	p.Settle(time.Second, s.say)
	if !gone(member) {
		t.Errorf("pid %d is still there after Settle", member)
	}
	if !strings.Contains(s.String(), "running: waiting for them (Ctrl-C stops them)") {
		t.Errorf("Settle said %q", s.String())
	}
	// Nothing left, or what exits within a second by itself (a resource
	// tracker): nothing said.
	for _, script := range []string{"exit 0", "sleep 0.3 & exit 0"} {
		q := start(t, script, Options{})
		q.Wait()
		var none said
		q.Settle(time.Second, none.say)
		if none.String() != "" {
			t.Errorf("Settle of sh -c %q said %q", script, none.String())
		}
	}
}
