package pystack

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Thread is one Python thread and its stack, read at one instant.
type Thread struct {
	// TID is its native thread id (/proc/PID/task/TID); 0 when unknown.
	TID int `json:"tid"`
	// ID is Python's id of it (threading.get_ident(): its pthread_t).
	ID uint64 `json:"thread_id"`
	// Name is the kernel's name of the thread (/proc/PID/task/TID/comm),
	// "" when unreadable.
	Name string `json:"name,omitempty"`
	// HoldsGIL: it held the GIL when read.
	HoldsGIL bool `json:"holds_gil"`
	// Frames is its stack, innermost first; empty when it runs no Python
	// code or its stack was dropped.
	Frames []Frame `json:"frames"`
	// Dropped says why its stack was dropped; "" when it was read.
	Dropped DropReason `json:"dropped,omitempty"`
}

// Limits on the lists walked.
const (
	maxInterpreters = 64
	maxThreads      = 4096
)

// generation is how long a checked code object is trusted without
// reading it again, and a thread's name is kept.
const generation = time.Second

// ErrExited is a read of a process that has exited.
var ErrExited = errors.New("the process exited")

// Threads reads every thread's stack once, oldest thread first. A stack
// that raced the interpreter is dropped (Thread.Dropped) and counted
// (Drops); a thread list that changed under the read gives
// ErrListChanged, a process that exited ErrExited.
func (p *Process) Threads() ([]Thread, error) {
	p.cache.reset()
	p.cache.prefetch()
	p.arena = make([]Frame, 0, p.sizes[0]+16)
	p.budget = maxPassFrames
	if now := time.Now(); now.Sub(p.genAt) >= generation {
		p.gen++
		p.genAt = now
	}
	interp, err := p.ptr(p.runtime + uint64(p.lay.interpHead))
	if err != nil {
		return nil, p.failed(fmt.Errorf("read the interpreter list: %w", err))
	}
	out := make([]Thread, 0, p.sizes[1]+2)
	for n := 0; interp != 0; n++ {
		if n == maxInterpreters {
			return nil, p.failed(fmt.Errorf("more than %d interpreters: %w", maxInterpreters, ErrListChanged))
		}
		if out, err = p.interpreter(interp, out); err != nil {
			return nil, p.failed(err)
		}
		if interp, err = p.ptr(interp + uint64(p.lay.interpNext)); err != nil {
			return nil, p.failed(fmt.Errorf("read the interpreter list: %w", err))
		}
	}
	p.name(out)
	p.sizes = [2]int{len(p.arena), len(out)}
	return out, nil
}

// failed is err as Threads returns it: ErrExited once the process is gone;
// else a changed list, counted.
func (p *Process) failed(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pid %d: %w", p.pid, ErrExited)
	}
	p.drops.List++
	if errors.Is(err, ErrListChanged) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrListChanged, err)
}

// tstate is what the reader takes from one PyThreadState.
type tstate struct {
	addr, next, id, frame uint64
	native                int
}

// interpreter appends the threads of the interpreter at interp to out.
func (p *Process) interpreter(interp uint64, out []Thread) ([]Thread, error) {
	holder, err := p.gilHolder(interp)
	if err != nil {
		return out, fmt.Errorf("read the GIL: %w", err)
	}
	states, err := p.tstates(interp)
	if err != nil {
		return out, err
	}
	slices.Reverse(states) // oldest first: the main thread is read first
	for _, ts := range states {
		t := Thread{ID: ts.id, TID: ts.native, HoldsGIL: ts.addr == holder}
		if p.lay.threadNativeID < 0 {
			t.TID = p.tids.tid(p, ts.id)
		}
		frames, err := p.stack(ts.frame)
		if err != nil {
			t.Dropped = reasonOf(err)
			p.drops.add(t.Dropped)
		} else {
			t.Frames = frames
		}
		out = append(out, t)
	}
	return out, nil
}

// tstates reads the interpreter's thread list (newest first).
func (p *Process) tstates(interp uint64) ([]tstate, error) {
	l := &p.lay
	addr, err := p.ptr(interp + uint64(l.interpThreads))
	if err != nil {
		return nil, fmt.Errorf("read the thread list: %w", err)
	}
	var states []tstate
	p.list.reset()
	for addr != 0 {
		if len(states) == maxThreads || !p.list.add(addr) {
			return nil, fmt.Errorf("thread %#x: %w", addr, ErrListChanged)
		}
		ts, err := p.tstate(addr)
		if err != nil {
			return nil, fmt.Errorf("read thread %#x: %w", addr, err)
		}
		states = append(states, ts)
		addr = ts.next
	}
	return states, nil
}

// tstate reads the PyThreadState at addr.
func (p *Process) tstate(addr uint64) (tstate, error) {
	l := &p.lay
	b, err := p.read(addr, l.threadSize)
	if err != nil {
		return tstate{}, err
	}
	ts := tstate{addr: addr, next: le64(b, l.threadNext), id: le64(b, l.threadID), frame: le64(b, l.threadFrame)}
	if l.threadNativeID >= 0 {
		ts.native = int(int32(le64(b, l.threadNativeID)))
	}
	if l.cframeCurrent >= 0 && ts.frame != 0 {
		if ts.frame, err = p.ptr(ts.frame + uint64(l.cframeCurrent)); err != nil {
			return tstate{}, fmt.Errorf("read its cframe: %w", err)
		}
	}
	return ts, nil
}

// gilHolder is the thread state that holds the GIL of the interpreter at
// interp, 0 when none does: the runtime's GIL on 3.10 and 3.11, the one
// the interpreter points to from 3.12.
func (p *Process) gilHolder(interp uint64) (uint64, error) {
	l := &p.lay
	base, locked, holder := p.runtime, l.runtimeGILLocked, l.runtimeGILHolder
	if l.interpGIL >= 0 {
		gil, err := p.ptr(interp + uint64(l.interpGIL))
		if err != nil || gil == 0 {
			return 0, err
		}
		base, locked, holder = gil, l.gilLocked, l.gilHolder
	}
	lo, hi := min(locked, holder), max(locked, holder)+8
	b, err := p.read(base+uint64(lo), hi-lo)
	if err != nil {
		return 0, err
	}
	if int32(le32(b, locked-lo)) <= 0 {
		return 0, nil
	}
	return le64(b, holder-lo), nil
}
