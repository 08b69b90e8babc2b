package feed

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/pystack"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/stacks"
)

// ReadStacks makes the feed's attaches read the stacks of a trainer that
// leaves them to its viewer (a stage word in its hello) from outside the
// process (package stacks, at PIPETOP_STACKS_HZ): its stacks frames come
// in as if the trainer had sent them. A read that is refused asks the
// trainer to sample its own (ipc.ViewOptions.Inside). It returns the view
// options the feed's attaches now use.
func (f *Feed) ReadStacks() ipc.ViewOptions {
	f.mu.Lock()
	o := f.view
	f.mu.Unlock()
	o.Inside = f.inside
	f.SetView(o)
	return o
}

// inside starts reading the stacks of the trainer of hello h (replacing
// the previous reading); the reason it cannot, else "".
func (f *Feed) inside(h ipc.Hello) string {
	f.mu.Lock()
	hz := f.hz
	f.mu.Unlock()
	if hz <= 0 {
		return "" // PIPETOP_STACKS_HZ=0 here: no stack samples, from outside or in
	}
	pid, _ := watched(&h)
	s, err := stacks.Start(h, pid, hz, func(ss *stage.StackSamples) { f.outsideFrame(h, ss) })
	f.swapOutside(s)
	if err != nil {
		return err.Error()
	}
	return ""
}

// swapOutside makes s the feed's outside reading, stopping the previous.
// What the previous one read is kept for the run's samples (RunStacks)
// when s reads the same trainer process (a reconnect), else forgotten.
func (f *Feed) swapOutside(s *stacks.Sampler) {
	f.mu.Lock()
	old := f.outside
	f.outside = s
	f.mu.Unlock()
	if old == nil {
		return
	}
	old.Stop()
	run := old.Run()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case s != nil && s.Same(old):
		f.earlier = stage.MergeStacks(f.earlier, run)
	case s != nil:
		f.earlier = nil
	}
}

// outsideFrame applies a stacks frame read from the trainer of hello h,
// while the feed still shows that process.
func (f *Feed) outsideFrame(h ipc.Hello, ss *stage.StackSamples) {
	f.mu.Lock()
	ok := f.hello != nil && f.hello.PID == h.PID && f.hello.StartNs == h.StartNs
	gen := f.gen
	f.mu.Unlock()
	if ok {
		f.apply(gen, ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeStacks, Stacks: ss}}, time.Now())
	}
}

// RunStacks is the whole run's stack samples read from outside the
// trainer it shows, and its pid; nil when none were read.
func (f *Feed) RunStacks() (pid int, s *stage.StackSamples) {
	f.mu.Lock()
	o, earlier := f.outside, f.earlier
	f.mu.Unlock()
	if o == nil {
		return 0, nil
	}
	return o.PID(), stage.MergeStacks(earlier, o.Run())
}

// AttachProcess shows the Python process pid, which runs no
// instrumentation (no trainer socket): a hello made up for it
// (stacks.Plain) and its stack samples read from outside, its main thread
// as the training thread's, until it exits or ctx ends. An error says
// why it cannot be read (not Python, another user's, an unsupported
// version).
func (f *Feed) AttachProcess(ctx context.Context, pid int) error {
	h, err := stacks.Plain(pid)
	if err != nil {
		return err
	}
	f.mu.Lock()
	hz := f.hz
	if f.view.Inside == nil {
		hz = stacks.Hz(os.Getenv)
	}
	f.mu.Unlock()
	ep := ipc.Endpoint{Name: h.Name, PID: pid}
	frames := make(chan *stage.StackSamples, 4)
	s, err := stacks.Start(h, pid, hz, func(ss *stage.StackSamples) {
		select {
		case frames <- ss:
		default: // the feed is behind: a second of samples less
		}
	})
	if err != nil {
		return err
	}
	f.swapOutside(s)
	f.start(ctx, fmt.Sprintf("pid %d", pid), "", func(ctx context.Context, gen int, deliver func(ipc.Message), _ ipc.ViewOptions) {
		deliver(ipc.Message{Connected: &h, Endpoint: ep})
		for {
			select {
			case ss := <-frames:
				deliver(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeStacks, Stacks: ss}, Endpoint: ep})
			case <-s.Done():
				deliver(ipc.Message{Disconnected: fmt.Errorf("pid %d: %w", pid, pystack.ErrExited), Endpoint: ep})
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return nil
}
