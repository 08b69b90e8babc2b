// Package stacks is pipetop's stack sampler for a trainer that leaves its
// stack samples to the viewer (its hello announces a stage word,
// ipc.StageWord): it reads the training process's Python threads and each
// DataLoader worker's main thread from outside, with metrics/pystack, at
// PIPETOP_STACKS_HZ (default 100) and folds them, once a second, into a
// stacks frame as the Python instrumentation would send it: the training
// thread's samples tagged with the stage the stage word names, each
// worker's samples in a fetch (slow-fetch in one far slower than its
// median), and the process's other Python threads with how much of a core
// they held the GIL. Nothing runs inside the trainer.
package stacks

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/pystack"
	"github.com/pipetop/pipetop/metrics/stage"
)

// Settings read from the environment.
const (
	// HzEnv is the stack samples per second (0: off), as for the Python
	// stack sampler.
	HzEnv = "PIPETOP_STACKS_HZ"
	// RefuseEnv is a test fake: set, the read from outside is refused
	// with its value as the reason, as a kernel refusal would be.
	RefuseEnv = "PIPETOP_TEST_STACKS_REFUSE"
)

// Rates and intervals.
const (
	DefaultHz = 100.0
	maxHz     = 1000.0
	publish   = time.Second // between stacks frames
	maxWeight = time.Second // the most wall time one sample stands for
)

// Stage word layout (clients/python/pipetop_publish/stageword.py).
const (
	wordMagic  = 0x3170_6f74_6570_6970 // "pipetop1", little-endian
	wordBytes  = 64
	wordStage  = 1
	wordWorker = 2
	wordFetch  = 3
	wordTyp    = 4
	wordInside = 5
)

// errInside is a trainer that samples its own stacks now (a viewer was
// refused the read from outside): reading it too would count its samples
// twice in a viewer that gets both.
var errInside = errors.New("the trainer samples its own stacks")

// Slow fetches, as the Python publisher tells them (workers.SLOW_FETCH).
const (
	slowFactor = 4
	slowMin    = 20 * time.Millisecond
)

// Hz is the rate PIPETOP_STACKS_HZ asks for (anything unreadable: the
// default; at most 1,000).
func Hz(getenv func(string) string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(getenv(HzEnv)), 64)
	if err != nil || v != v || v < 0 {
		return DefaultHz
	}
	return min(v, maxHz)
}

// Sampler reads one trainer process and its DataLoader workers.
type Sampler struct {
	h       ipc.Hello
	pid     int
	hz      float64
	proc    *pystack.Process
	deliver func(*stage.StackSamples)
	fold    *fold
	mu      sync.Mutex       // guards run
	run     *fold            // the whole run's samples of the training thread and the workers
	workers map[int]*worker  // by pid
	cpu     map[int]int64    // the other threads' CPU at the last frame
	runCPU  map[int][2]int64 // each thread's CPU and the wall time it covers, over the run (guarded by mu)
	word    [wordBytes]byte
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// worker is a child process of the trainer: a DataLoader worker once its
// stage word says so; nil proc: not a Python process pipetop may read.
type worker struct {
	proc *pystack.Process
}

// Start attaches to the trainer of hello h (pid: as seen from here) and
// samples it at hz until it exits or Stop, handing deliver a stacks frame
// each second. An error says why the read from outside is refused or
// impossible (the trainer then samples its own stacks). A hello without a
// stage word is a Python process pipetop only attached to (Plain): its
// main thread's samples are the training thread's, in stage other, and
// it has no workers.
func Start(h ipc.Hello, pid int, hz float64, deliver func(*stage.StackSamples)) (*Sampler, error) {
	if why := os.Getenv(RefuseEnv); why != "" {
		return nil, fmt.Errorf("pid %d: refused (%s): %s", pid, RefuseEnv, why)
	}
	if hz <= 0 {
		return nil, fmt.Errorf("%s=0: stack samples off", HzEnv)
	}
	p, err := pystack.Attach(pid)
	if err != nil {
		return nil, err
	}
	s := &Sampler{h: h, pid: pid, hz: hz, proc: p, deliver: deliver, workers: make(map[int]*worker), cpu: make(map[int]int64),
		runCPU: make(map[int][2]int64), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.readWord(p.ReadAt); err != nil {
		p.Close()
		return nil, fmt.Errorf("pid %d: read its stage word at %#x: %w", pid, h.StageWord.Addr, err)
	}
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	s.fold, s.run = newFold(newFiles(cwd)), newFold(newFiles(cwd))
	go s.loop()
	return s, nil
}

// Stop stops the sampler and waits for it.
//
// The sampler also stops by itself when the trainer exits, and when the
// trainer's stage word says it samples its own stacks (another viewer was
// refused the read): its frames then reach every viewer.
func (s *Sampler) Stop() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// Done is closed when the sampler has stopped (Stop, the trainer exited,
// or it samples its own stacks).
func (s *Sampler) Done() <-chan struct{} { return s.done }

func (s *Sampler) loop() {
	defer close(s.done)
	defer s.close()
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.hz))
	defer tick.Stop()
	last, sent, scanned, quick := time.Now(), time.Now(), time.Time{}, time.Time{}
	s.readCPU()
	for {
		select {
		case <-s.stop:
			return
		case now := <-tick.C:
			ns := int64(min(now.Sub(last), maxWeight))
			last = now
			if all := now.Sub(scanned) >= fullScan; s.h.StageWord != nil && (all || now.Sub(quick) >= quickScan) {
				if all {
					scanned = now
				}
				quick = now
				s.scan(all)
			}
			if err := s.sample(ns); errors.Is(err, pystack.ErrExited) || errors.Is(err, errInside) {
				s.send(now, now.Sub(sent))
				return
			}
			if now.Sub(sent) >= publish {
				s.send(now, now.Sub(sent))
				sent = now
			}
		}
	}
}

func (s *Sampler) close() {
	s.proc.Close()
	for _, w := range s.workers {
		if w.proc != nil {
			w.proc.Close()
		}
	}
}

// send hands over the interval's samples, and adds the threads' CPU over
// it to the run's.
func (s *Sampler) send(now time.Time, interval time.Duration) {
	cpu := s.readCPU()
	s.mu.Lock()
	for tid, ns := range cpu {
		r := s.runCPU[tid]
		s.runCPU[tid] = [2]int64{r[0] + ns, r[1] + int64(interval)}
	}
	s.mu.Unlock()
	if out := s.fold.take(now, interval, s.hz, func(tid int) (int64, int64, bool) {
		ns, ok := cpu[tid]
		return ns, int64(interval), ok
	}); out != nil {
		s.deliver(out)
	}
}

// readWord reads the stage word with read (a Process's ReadAt or
// ReadCached) into s.word and checks it is one; without a stage word
// (Plain), the word of a process in no stage.
func (s *Sampler) readWord(read func([]byte, uint64) error) error {
	if s.h.StageWord == nil {
		clear(s.word[:])
		return nil
	}
	if err := read(s.word[:], s.h.StageWord.Addr); err != nil {
		return err
	}
	if s.at(0) != wordMagic {
		return errors.New("no stage word there")
	}
	return nil
}

// at is word i of the last stage word read.
func (s *Sampler) at(i int) uint64 { return binary.LittleEndian.Uint64(s.word[8*i:]) }

// stageName is the stage code c names: 0 and unknown codes are other.
func (s *Sampler) stageName(c uint64) string {
	if s.h.StageWord != nil && c >= 1 && c <= uint64(len(s.h.StageWord.Stages)) {
		return s.h.StageWord.Stages[c-1]
	}
	return stage.Other
}

// sample takes one sample of the trainer and each worker, standing for ns.
func (s *Sampler) sample(ns int64) error {
	threads, err := s.proc.Threads()
	if err != nil {
		if !errors.Is(err, pystack.ErrExited) {
			s.drop() // the thread list changed under the read
		}
		return err
	}
	// The word as it was when the pass's one read took the stacks.
	if err := s.readWord(s.proc.ReadCached); err != nil {
		return err
	}
	if s.at(wordInside) != 0 {
		return errInside
	}
	stg := s.stageName(s.at(wordStage))
	train := s.training(threads)
	for i := range threads {
		t := &threads[i]
		if t.Dropped != "" && !strings.HasPrefix(t.Name, "pipetop-") {
			s.drop()
		}
		switch {
		case i == train:
			s.add(stage.RoleTrain, -1, stg, t.Frames, ns)
		case !strings.HasPrefix(t.Name, "pipetop-"):
			s.fold.other(t, ns)
			s.mu.Lock()
			s.run.other(t, ns)
			s.mu.Unlock()
		}
	}
	for pid, w := range s.workers {
		if w.proc != nil && s.sampleWorker(w, ns) != nil {
			w.proc.Close()
			delete(s.workers, pid)
		}
	}
	return nil
}

// training is the index of the training thread: the hello's tid, else
// the oldest thread.
func (s *Sampler) training(threads []pystack.Thread) int {
	tid := s.h.TID
	if s.h.HostPID > 0 && s.h.HostPID != s.h.PID {
		tid = 0 // another pid namespace: its tid is not ours
	}
	for i := range threads {
		if tid > 0 && threads[i].TID == tid {
			return i
		}
	}
	if tid > 0 || len(threads) == 0 {
		return -1
	}
	return 0
}

// sampleWorker samples a worker's main thread when it is in a fetch.
func (s *Sampler) sampleWorker(w *worker, ns int64) error {
	if err := s.readWord(w.proc.ReadAt); err != nil {
		return err
	}
	id, start := s.at(wordWorker), s.at(wordFetch)
	if id == 0 || start == 0 {
		return nil
	}
	stg := ""
	if typ := time.Duration(s.at(wordTyp)); typ > 0 && monotonic()-time.Duration(start) > max(slowMin, slowFactor*typ) {
		stg = stage.SlowFetch
	}
	threads, err := w.proc.Threads()
	if errors.Is(err, pystack.ErrExited) {
		return err
	}
	if err != nil || (len(threads) > 0 && threads[0].Dropped != "") {
		s.drop()
		return nil
	}
	if len(threads) == 0 {
		return nil
	}
	s.add(stage.RoleWorker, int(id-1), stg, threads[0].Frames, ns)
	return nil
}

// drop counts a stack the read dropped (it raced the interpreter) in the
// interval's and the run's samples.
func (s *Sampler) drop() {
	s.fold.dropped++
	s.mu.Lock()
	s.run.dropped++
	s.mu.Unlock()
}

// add folds a sample into the interval's and the run's samples.
func (s *Sampler) add(role string, worker int, stg string, frames []pystack.Frame, ns int64) {
	s.fold.add(role, worker, stg, frames, ns)
	s.mu.Lock()
	s.run.add(role, worker, stg, frames, ns)
	s.mu.Unlock()
}

// Run is the whole run's stack samples so far (IntervalNs 0: a whole
// run), the other threads with their CPU over the run; nil without any.
func (s *Sampler) Run() *stage.StackSamples {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run.snapshot(time.Now(), 0, s.hz, func(tid int) (int64, int64, bool) {
		r, ok := s.runCPU[tid]
		return r[0], r[1], ok
	})
}

// Same reports whether o reads the same trainer process as s: its
// hello's pid and start time.
func (s *Sampler) Same(o *Sampler) bool {
	return o != nil && s.h.PID == o.h.PID && s.h.StartNs == o.h.StartNs
}

// PID is the trainer's pid, as its hello gives it.
func (s *Sampler) PID() int { return s.h.PID }
