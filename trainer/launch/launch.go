// Package launch starts the ranks of a multi-process run on this host as
// child processes, the way torchrun does: each child gets torchrun's
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RUN_ID), its output is prefixed with its rank, and the
// launcher watches them all: the first rank to fail is named, the others
// get the process-group timeout to stop on their own and are then
// terminated, and an interrupt is forwarded to every rank.
package launch

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/trainer"
)

// Config is what Run launches.
type Config struct {
	NProc int      // ranks to start (>= 1)
	Path  string   // the program (normally os.Executable())
	Args  []string // its arguments, the same for every rank
	Env   []string // the base environment (nil: os.Environ())
	// Grace is how long the other ranks get to stop on their own after one
	// fails (they notice through the process group's timeout); then they
	// get SIGTERM and, Kill later, SIGKILL.
	Grace time.Duration
	Kill  time.Duration
	// Out receives every rank's stdout and stderr, line by line, prefixed
	// "[rank R] ". Nil: os.Stderr.
	Out io.Writer
	// Started, when set, is called with each rank's pid once it runs.
	Started func(rank, pid int)
}

// Exit is how one rank ended.
type Exit struct {
	Rank  int
	PID   int
	Err   error  // nil: exited 0
	Cause string // "exited with status 1", "killed by signal killed", ...
}

// Run starts the ranks and waits for all of them. It returns nil when every
// rank exited 0. Otherwise the error names the first rank that failed
// (the likely cause) and how the others ended. Cancelling ctx (Ctrl-C)
// sends SIGINT to every rank, which stops them together at a step boundary
// with a checkpoint; a second cancel is not possible through ctx, so a
// rank that ignores SIGINT gets SIGKILL after Grace+Kill.
func Run(ctx context.Context, cfg Config) ([]Exit, error) {
	if cfg.NProc < 1 {
		return nil, fmt.Errorf("--nproc %d: want at least 1", cfg.NProc)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("launch: pick a rendezvous port: %w", err)
	}
	run, err := runID()
	if err != nil {
		return nil, err
	}
	// The ranks die with the launcher (Pdeathsig), which Linux ties to the
	// thread that forked them: keep that thread for the whole run.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := &launcher{cfg: cfg, out: cfg.Out, exits: make(chan Exit, cfg.NProc)}
	if l.out == nil {
		l.out = os.Stderr
	}
	if cfg.Env == nil {
		l.cfg.Env = os.Environ()
	}
	for r := range cfg.NProc {
		rk := trainer.Rank{Rank: r, World: cfg.NProc, LocalRank: r, MasterAddr: "127.0.0.1", MasterPort: port, Run: run}
		if err := l.start(rk); err != nil {
			l.signalAll(syscall.SIGKILL)
			l.wg.Wait()
			return nil, err
		}
	}
	return l.watch(ctx)
}

type launcher struct {
	cfg   Config
	out   io.Writer
	outMu sync.Mutex
	procs []*exec.Cmd
	exits chan Exit
	wg    sync.WaitGroup
	// forced is set once the launcher terminated the remaining ranks.
	forced bool
}

// start launches one rank with its environment and prefixed output.
func (l *launcher) start(rk trainer.Rank) error {
	cmd := exec.Command(l.cfg.Path, l.cfg.Args...)
	cmd.Env = append(withoutRankVars(l.cfg.Env), rk.Env()...)
	// Each rank in its own process group: a terminal's Ctrl-C reaches only
	// the launcher, which forwards exactly one SIGINT; and the rank dies
	// with the launcher.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("launch rank %d: %w", rk.Rank, err)
	}
	l.procs = append(l.procs, cmd)
	if l.cfg.Started != nil {
		l.cfg.Started(rk.Rank, cmd.Process.Pid)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		l.copyLines(rk.Rank, pr)
	}()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := cmd.Wait()
		pw.Close()
		<-copied
		l.exits <- Exit{Rank: rk.Rank, PID: cmd.Process.Pid, Err: err, Cause: cause(err)}
	}()
	return nil
}

func (l *launcher) copyLines(rank int, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.outMu.Lock()
		fmt.Fprintf(l.out, "[rank %d] %s\n", rank, sc.Text())
		l.outMu.Unlock()
	}
	io.Copy(io.Discard, r) // a line over 1 MiB: keep the pipe drained
}

func (l *launcher) say(format string, args ...any) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	fmt.Fprintf(l.out, "[launcher] "+format+"\n", args...)
}

// watch collects exits, escalating when a rank fails or ctx is cancelled.
func (l *launcher) watch(ctx context.Context) ([]Exit, error) {
	var exits []Exit
	var first *Exit
	var deadline <-chan time.Time
	stage := 0 // 0: running, 1: waiting for the others, 2: SIGTERM sent, 3: SIGKILL sent
	escalate := func(reason string) {
		switch stage {
		case 0, 1:
			stage = 2
			l.forced = true
			l.say("%s: sending SIGTERM to the remaining ranks", reason)
			l.signalAll(syscall.SIGTERM)
			l.signalAll(syscall.SIGCONT) // a stopped rank acts on it too
			deadline = time.After(l.cfg.Kill)
		case 2:
			stage = 3
			l.say("%s: sending SIGKILL to the remaining ranks", reason)
			l.signalAll(syscall.SIGKILL)
			deadline = nil
		}
	}
	done := ctx.Done()
	for len(exits) < len(l.procs) {
		select {
		case e := <-l.exits:
			if l.forced && e.Err != nil {
				e.Cause = fmt.Sprintf("did not stop on its own within %s (hung?); after the launcher's SIGTERM it %s", l.cfg.Grace, e.Cause)
			}
			exits = append(exits, e)
			l.markExited(e.Rank)
			if e.Err != nil && first == nil {
				first = &exits[len(exits)-1]
				if len(exits) < len(l.procs) && stage == 0 {
					stage = 1
					l.say("rank %d (pid %d) %s; the other ranks get %s to stop", e.Rank, e.PID, e.Cause, l.cfg.Grace)
					deadline = time.After(l.cfg.Grace)
				}
			}
		case <-done:
			done = nil
			l.say("interrupted: asking every rank to stop at the next step (SIGINT)")
			l.signalAll(syscall.SIGINT)
			if stage == 0 {
				stage = 1
				deadline = time.After(l.cfg.Grace)
			}
		case <-deadline:
			escalate("ranks still running after the grace period")
		}
	}
	l.wg.Wait()
	if first == nil {
		return exits, nil
	}
	var others []string
	for _, e := range exits {
		if e.Rank != first.Rank {
			others = append(others, fmt.Sprintf("rank %d %s", e.Rank, e.Cause))
		}
	}
	msg := fmt.Sprintf("rank %d (pid %d) %s", first.Rank, first.PID, first.Cause)
	if len(others) > 0 {
		msg += "; then " + strings.Join(others, ", ")
	}
	return exits, errors.New(msg)
}

// markExited forgets a rank's process so it is not signalled again.
func (l *launcher) markExited(rank int) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if rank < len(l.procs) {
		l.procs[rank] = &exec.Cmd{} // placeholder without a Process
	}
}

func (l *launcher) signalAll(sig syscall.Signal) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	for _, c := range l.procs {
		if c.Process != nil {
			c.Process.Signal(sig)
		}
	}
}

// cause says how a process ended, from cmd.Wait's error.
func cause(err error) string {
	if err == nil {
		return "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return err.Error()
}

// withoutRankVars drops rank variables inherited from the launcher's own
// environment.
func withoutRankVars(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case trainer.EnvRank, trainer.EnvWorldSize, trainer.EnvLocalRank, trainer.EnvMasterAddr, trainer.EnvMasterPort, trainer.EnvRunID:
			continue
		}
		out = append(out, kv)
	}
	return out
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func runID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("launch: run id: %w", err)
	}
	return "pipetrain-" + hex.EncodeToString(b[:]), nil
}
