// Package child is a command pipetop runs and watches (pipetop run -- CMD):
// started in the process group pipetop is in (the terminal's, with one),
// the signals pipetop receives forwarded to it (SIGINT to its descendants
// too), its exit status, what it leaves running when it exits (Adopt,
// Settle), the trainer socket it or one of its descendants opens
// (AwaitSocket), and its output held while a screen owns the terminal
// (Held).
//
// A Process is started from an *exec.Cmd the caller has set up (its
// environment, standard streams, process attributes), so a caller that runs
// a command once per phase starts one Process a phase and waits for each.
package child

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// forwarded are the signals a Process passes on to its command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Options say how a Process treats its command.
type Options struct {
	// Terminal is whether the command shares pipetop's terminal and its
	// foreground process group: SIGINT and SIGQUIT typed at the terminal
	// already reach it, so they are not sent twice.
	Terminal bool
	// Group starts the command in a process group of its own, which Stop
	// ends as a whole (its DataLoader workers, the ranks a launcher
	// started); pipetop's signals are then not forwarded: the caller
	// decides what a Ctrl-C does. A command in a group of its own reads
	// no terminal: give it a stdin that is not one.
	Group bool
}

// Process is a started command. From Start until Close, pipetop catches
// the signals in forwarded instead of dying of them, and passes each on to
// the command while it runs.
type Process struct {
	cmd    *exec.Cmd
	sigs   chan os.Signal
	exited chan struct{} // closed once the command was waited for
	err    error         // cmd.Wait's error, set before exited closes
	group  bool          // the command leads a process group of its own
	// stopAsked: pipetop caught SIGINT, SIGTERM or SIGHUP while the
	// command ran (Settle then stops what it leaves behind).
	stopAsked atomic.Bool
}

// Start starts cmd and forwards pipetop's signals to it until it exits.
// Call Close once done with the Process.
func Start(cmd *exec.Cmd, opts Options) (*Process, error) {
	p := &Process{cmd: cmd, sigs: make(chan os.Signal, 8), exited: make(chan struct{}), group: opts.Group}
	if opts.Group {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
		// Outside pipetop's group no terminal hangup or Ctrl-C reaches
		// it: should pipetop die without stopping it, it is told.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	} else {
		// Caught before the start, so that none kills pipetop and leaves
		// the command running on its own.
		signal.Notify(p.sigs, forwarded...)
	}
	if err := cmd.Start(); err != nil {
		signal.Stop(p.sigs)
		return nil, err // exec's error names the command already
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if !opts.Group {
		go p.forward(opts.Terminal)
	}
	return p, nil
}

// Stop ends the command: SIGINT, SIGTERM after grace if it is still
// there, SIGKILL after another grace. A command started with
// Options.Group gets them as a whole process group (its DataLoader
// workers, the ranks a launcher started), and whatever is left of the
// group once it exited (a worker that outlived it) is killed. Stop returns
// the last signal it sent (nil when the command had exited already), once
// the command was waited for.
func (p *Process) Stop(grace time.Duration) os.Signal {
	target := p.Pid()
	if p.group {
		target = -target
	}
	var sent os.Signal
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		if p.done() || syscall.Kill(target, s) != nil {
			break
		}
		sent = s
		select {
		case <-p.exited:
		case <-time.After(grace):
		}
	}
	<-p.exited
	if p.group {
		_ = syscall.Kill(target, syscall.SIGKILL)
	}
	return sent
}

// done is whether the command has exited and been waited for.
func (p *Process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// forward passes signals to the command until it exited, SIGINT to its
// descendants too; with terminal, SIGINT and SIGQUIT are not (see
// Options.Terminal).
func (p *Process) forward(terminal bool) {
	for {
		select {
		case <-p.exited:
			return
		case s := <-p.sigs:
			if isStop(s) {
				p.stopAsked.Store(true)
			}
			switch {
			case terminal && (s == syscall.SIGINT || s == syscall.SIGQUIT):
			case s == syscall.SIGINT:
				p.interrupt()
			default:
				_ = p.cmd.Process.Signal(s)
			}
		}
	}
}

// Interrupt is a Ctrl-C the terminal did not deliver (pipetop's monitor
// read it as a key in raw mode): SIGINT to the command and to all its
// descendants, as a Ctrl-C at a terminal reaches its whole foreground
// group, and Settle then stops what the command leaves behind.
func (p *Process) Interrupt() {
	p.stopAsked.Store(true)
	p.interrupt()
}

// interrupt sends SIGINT to the command and its descendants (the ranks a
// launcher started, its DataLoader workers).
func (p *Process) interrupt() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	signalAll(descendants(p.Pid()), syscall.SIGINT)
}

// Pid is the command's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the command has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for the command to exit and returns its exit status: its
// code, or 128+N when signal N killed it. The error is not nil, and the
// status -1, only when the command could not be waited for.
func (p *Process) Wait() (int, error) {
	<-p.exited
	s := status(p.err)
	if s < 0 {
		return s, p.err
	}
	return s, nil
}

// Close stops catching the forwarded signals: from then on they act on
// pipetop as they did before Start.
func (p *Process) Close() { signal.Stop(p.sigs) }

// status turns a wait error into an exit status: its code, or 128+N when
// signal N killed the command; -1 when it could not be waited for.
func status(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
