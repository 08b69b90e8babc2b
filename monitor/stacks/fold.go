package stacks

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/pystack"
	"github.com/pipetop/pipetop/metrics/stage"
)

// maxDepth is the most frames of a folded stack (the innermost ones), as
// the Python stack sampler keeps.
const maxDepth = 128

// more is the frame of the row that holds the stacks that did not fit.
var more = stage.CodeFrame{Name: "[more stacks]", Lib: "(more)"}

// Worker loop: a forked DataLoader worker's stack starts at torch's worker
// loop; the parent's frames below it are never returned to.
const (
	workerLoop     = "_worker_loop"
	workerLoopFile = "torch/utils/data/_utils/worker.py"
)

// fold gathers one interval's stack samples into a stacks frame's rows.
type fold struct {
	files   *files
	frames  []stage.CodeFrame
	index   map[stage.CodeFrame]int
	rows    []stage.StackRow
	keys    map[string]int
	threads map[int]*thread
	key     []byte
	stack   []int
	dropped int64 // stacks dropped: their read raced the interpreter
}

// thread is one of the process's other Python threads over the interval.
type thread struct {
	out  stage.ThreadSamples
	keys map[string]int
	held int64 // the weight of its samples that found it holding the GIL
}

func newFold(f *files) *fold {
	return &fold{files: f, index: make(map[stage.CodeFrame]int), keys: make(map[string]int), threads: make(map[int]*thread)}
}

// ids interns the frames of a stack read innermost first into fo.stack,
// outermost first; empty when no frame is shown.
func (fo *fold) ids(frames []pystack.Frame, worker bool) []int {
	if worker {
		for i, f := range frames {
			if f.Name == workerLoop && strings.HasSuffix(f.File, workerLoopFile) {
				frames = frames[:i+1]
				break
			}
		}
	}
	if len(frames) > maxDepth {
		frames = frames[:maxDepth]
	}
	fo.stack = fo.stack[:0]
	for i := len(frames) - 1; i >= 0; i-- {
		cf, ok := fo.files.frame(frames[i].Name, frames[i].File, frames[i].Line)
		if ok {
			fo.stack = append(fo.stack, fo.intern(cf))
		}
	}
	return fo.stack
}

func (fo *fold) intern(cf stage.CodeFrame) int {
	if i, ok := fo.index[cf]; ok {
		return i
	}
	if len(fo.frames) >= stage.MaxStackFrames-1 {
		cf = more
		if i, ok := fo.index[cf]; ok {
			return i
		}
	}
	fo.frames = append(fo.frames, cf)
	fo.index[cf] = len(fo.frames) - 1
	return len(fo.frames) - 1
}

// stackKey is the key of a stack of frame ids after prefix.
func (fo *fold) stackKey(prefix string, stack []int) string {
	b := append(fo.key[:0], prefix...)
	for _, i := range stack {
		b = strconv.AppendInt(append(b, ','), int64(i), 10)
	}
	fo.key = b
	return string(b)
}

// add counts one sample standing for ns of a stack of role (worker: its
// id, else -1) in stage.
func (fo *fold) add(role string, worker int, stg string, frames []pystack.Frame, ns int64) {
	stack := fo.ids(frames, role == stage.RoleWorker)
	if len(stack) == 0 {
		return
	}
	key := fo.stackKey(role+"\x00"+strconv.Itoa(worker)+"\x00"+stg, stack)
	i, ok := fo.keys[key]
	if !ok {
		if len(fo.rows) >= stage.MaxStackRows-1 {
			stack = []int{fo.intern(more)}
			key = role + "\x00" + strconv.Itoa(worker) + "\x00" + stg + "\x00more"
		}
		if i, ok = fo.keys[key]; !ok {
			r := stage.StackRow{Role: role, Stage: stg, Stack: append([]int(nil), stack...)}
			if worker >= 0 {
				w := worker
				r.Worker = &w
			}
			fo.rows = append(fo.rows, r)
			i = len(fo.rows) - 1
			fo.keys[key] = i
		}
	}
	fo.rows[i].N++
	fo.rows[i].Ns += ns
}

// other counts one sample of another Python thread t.
func (fo *fold) other(t *pystack.Thread, ns int64) {
	th := fo.threads[t.TID]
	if th == nil {
		if len(fo.threads) >= stage.MaxStackThreads {
			return
		}
		th = &thread{out: stage.ThreadSamples{TID: t.TID, Name: t.Name}, keys: make(map[string]int)}
		fo.threads[t.TID] = th
	}
	if t.Name != "" {
		th.out.Name = t.Name // the latest: a thread may be named after it started
	}
	th.out.N++
	th.out.Probes++
	th.out.ProbedNs += ns
	if t.HoldsGIL {
		th.held += ns
	}
	stack := fo.ids(t.Frames, false)
	if len(stack) == 0 || len(th.out.Rows) >= stage.MaxStackRows {
		return
	}
	key := fo.stackKey("", stack)
	i, ok := th.keys[key]
	if !ok {
		th.out.Rows = append(th.out.Rows, stage.ThreadRow{Stack: append([]int(nil), stack...)})
		i = len(th.out.Rows) - 1
		th.keys[key] = i
	}
	th.out.Rows[i].N++
	th.out.Rows[i].Ns += ns
}

// take is the interval's stacks frame, up to now, over interval, at hz,
// with each other thread's CPU over the interval (cpu: its CPU time and
// the wall time that covers); nil without samples or drops. The fold starts empty.
func (fo *fold) take(now time.Time, interval time.Duration, hz float64, cpu func(tid int) (ns, covered int64, ok bool)) *stage.StackSamples {
	s := fo.snapshot(now, interval, hz, cpu)
	fo.frames, fo.rows, fo.dropped = nil, nil, 0
	clear(fo.index)
	clear(fo.keys)
	clear(fo.threads)
	return s
}

// snapshot is take that keeps the fold as it is: a copy of its rows and
// threads (a whole run's samples so far, interval 0).
func (fo *fold) snapshot(now time.Time, interval time.Duration, hz float64, cpu func(tid int) (ns, covered int64, ok bool)) *stage.StackSamples {
	if len(fo.rows) == 0 && len(fo.threads) == 0 && fo.dropped == 0 {
		return nil
	}
	s := &stage.StackSamples{TimeNs: now.UnixNano(), IntervalNs: int64(interval), Hz: hz, Frames: slices.Clone(fo.frames), Rows: slices.Clone(fo.rows),
		Dropped: fo.dropped}
	for _, th := range fo.threads {
		t := th.out
		t.Rows = slices.Clone(t.Rows)
		if ns, covered, ok := cpu(t.TID); ok {
			t.CPUNs, t.CoveredNs = ns, covered
		}
		t.FreeNs = free(t.CPUNs, t.CoveredNs, th.held, t.ProbedNs)
		s.Threads = append(s.Threads, t)
	}
	slices.SortFunc(s.Threads, func(a, b stage.ThreadSamples) int { return cmp.Compare(a.TID, b.TID) })
	return s
}

// free is the CPU a thread used without the GIL, as the in-process stack
// sampler's probes measure it (stage.ThreadSamples.FreeNs over ProbedNs):
// read from outside, its share of a core on a CPU (cpu over covered) less
// the share of its samples that found it holding the GIL (held over
// probed), so that ThreadProfile.GIL is the share it held the GIL.
func free(cpu, covered, held, probed int64) int64 {
	if covered <= 0 || probed <= 0 {
		return 0
	}
	share := float64(cpu)/float64(covered) - float64(held)/float64(probed)
	return int64(max(0, share) * float64(probed))
}
