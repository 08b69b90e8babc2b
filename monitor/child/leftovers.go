package child

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Adopt makes pipetop the reaper of what its commands leave behind
// (PR_SET_CHILD_SUBREAPER): a process a command started that outlives it
// (the ranks torch.multiprocessing.spawn started, a DataLoader worker)
// becomes pipetop's child instead of init's, so that Settle finds it once
// the command exited. Call it once, before Start.
func Adopt() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become the reaper of the command's processes: %w", err)
	}
	return nil
}

// settleTick is how often Settle looks for what is left.
const settleTick = 100 * time.Millisecond

// Settle deals with what the command left running once it exited (with
// Adopt, those processes are pipetop's children now): when pipetop was
// asked to stop (SIGINT, SIGTERM or SIGHUP, a Ctrl-C at the terminal
// included), it stops them, SIGINT, then SIGTERM after grace, SIGKILL
// after another, and says so; otherwise it says that they run on and waits
// for them, and such a signal meanwhile stops them. It returns once none
// is left, each waited for; what exits by itself within settleQuiet goes
// unmentioned. say prints a line for the user.
func (p *Process) Settle(grace time.Duration, say func(format string, args ...any)) {
	<-p.exited
	left := children(os.Getpid())
	if len(left) > 0 && !p.stopAsked.Load() {
		left = lingering(settleQuiet)
	}
	if len(left) == 0 {
		return
	}
	if p.stopAsked.Load() {
		say("pid %d exited and left %s running: stopping them", p.Pid(), describe(left))
		stopAll(grace, say)
		return
	}
	say("pid %d exited and left %s running: waiting for them (Ctrl-C stops them)", p.Pid(), describe(left))
	t := time.NewTicker(settleTick)
	defer t.Stop()
	for len(reap(children(os.Getpid()))) > 0 {
		select {
		case s := <-p.sigs:
			if isStop(s) {
				say("stopping %s", describe(children(os.Getpid())))
				stopAll(grace, say)
				return
			}
			signalAll(children(os.Getpid()), s.(syscall.Signal))
		case <-t.C:
		}
	}
}

// settleQuiet is how long what a command leaves behind may take to exit
// by itself before Settle says anything: multiprocessing's resource
// tracker outlives a torch.multiprocessing.spawn script by a moment.
const settleQuiet = time.Second

// lingering waits up to d for pipetop's children to exit, reaping them,
// and returns those still there.
func lingering(d time.Duration) []proc {
	end := time.Now().Add(d)
	left := reap(children(os.Getpid()))
	for len(left) > 0 && time.Now().Before(end) {
		time.Sleep(settleTick)
		left = reap(children(os.Getpid()))
	}
	return left
}

// stopAll stops pipetop's children, those that become its children
// meanwhile included: SIGINT, then SIGTERM after grace, SIGKILL after
// another grace; it returns once none is left.
func stopAll(grace time.Duration, say func(format string, args ...any)) {
	start := time.Now()
	sent := map[int]syscall.Signal{}
	for {
		left := reap(children(os.Getpid()))
		if len(left) == 0 {
			return
		}
		s := syscall.SIGINT
		switch since := time.Since(start); {
		case since >= 2*grace:
			s = syscall.SIGKILL
		case since >= grace:
			s = syscall.SIGTERM
		}
		for _, c := range left {
			if sent[c.pid] != s {
				if s == syscall.SIGKILL {
					say("pid %d (%s) did not stop within %s: killed", c.pid, c.comm, 2*grace)
				}
				sent[c.pid] = s
				_ = syscall.Kill(c.pid, s)
			}
		}
		time.Sleep(settleTick)
	}
}

// signalAll sends s to each of procs.
func signalAll(procs []proc, s syscall.Signal) {
	for _, c := range procs {
		_ = syscall.Kill(c.pid, s)
	}
}

// isStop is whether s asks pipetop to stop the run.
func isStop(s os.Signal) bool {
	return s == syscall.SIGINT || s == syscall.SIGTERM || s == syscall.SIGHUP
}

// proc is a process as /proc/PID/stat shows it.
type proc struct {
	pid, ppid int
	state     byte
	comm      string
}

// reap waits for those of procs that exited (zombies) and returns the
// others.
func reap(procs []proc) []proc {
	out := procs[:0]
	for _, c := range procs {
		var ws syscall.WaitStatus
		if c.state == 'Z' {
			if _, err := syscall.Wait4(c.pid, &ws, syscall.WNOHANG, nil); err == nil {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// children lists the processes whose parent is parent.
func children(parent int) []proc {
	var out []proc
	for _, c := range processes() {
		if c.ppid == parent {
			out = append(out, c)
		}
	}
	return out
}

// descendants lists the processes below root, parents before children.
func descendants(root int) []proc {
	kids := map[int][]proc{}
	for _, c := range processes() {
		kids[c.ppid] = append(kids[c.ppid], c)
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		for _, c := range kids[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// processes reads every process in /proc; those that vanish meanwhile are
// left out.
func processes() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if c, ok := parseStat(pid, b); ok {
			out = append(out, c)
		}
	}
	return out
}

// parseStat reads the command name, state and parent of /proc/PID/stat.
func parseStat(pid int, b []byte) (proc, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return proc{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, state: f[0][0], comm: string(b[open+1 : end])}, true
}

// describe names procs for the user: "2 processes (pids 41, 42: python3)".
func describe(procs []proc) string {
	pids := make([]string, len(procs))
	comms := []string{}
	for i, c := range procs {
		pids[i] = strconv.Itoa(c.pid)
		if !slices.Contains(comms, c.comm) {
			comms = append(comms, c.comm)
		}
	}
	n := "1 process (pid "
	if len(procs) > 1 {
		n = fmt.Sprintf("%d processes (pids ", len(procs))
	}
	return n + strings.Join(pids, ", ") + ": " + strings.Join(comms, ", ") + ")"
}
