// Package trace turns a recording into Chrome trace-event JSON, the format
// Perfetto's UI and chrome://tracing open: one process per trainer process
// (each rank of a recorded run, ordered by rank), a track of steps with
// their stages as child slices on the CPU, a track of GPU stage times,
// counters for GPU activity and memory (on the trainer's process; in a
// run, on the lowest rank's), and the loader's counters: its queue and
// workers, and each worker's busy share where the loader measures it per
// worker (a PyTorch DataLoader).
//
// Stage times are per-step totals, not intervals: the slices lay them end
// to end in the record's stage order from the step's start, so durations
// are measured and positions inside a step are approximate. Times count
// from the recording's first entry (otherData.start_unix_ns).
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources"
)

// Thread ids of each trainer process's tracks.
const (
	tidSteps = 1
	tidGPU   = 2
)

// Event is one trace event.
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // µs
	Dur  *float64       `json:"dur,omitempty"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Write writes the trace of the recorded entries to w.
func Write(w io.Writer, es []recording.Entry) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	t := &tracer{w: bw, first: true, procs: map[int]*proc{}}
	if len(es) > 0 {
		t.origin = es[0].T.UnixNano()
	}
	head := fmt.Sprintf(`{"displayTimeUnit":"ms","otherData":{"start_unix_ns":%d},"traceEvents":[`+"\n", t.origin)
	if _, err := bw.WriteString(head); err != nil {
		return err
	}
	for _, e := range es {
		t.entry(e)
	}
	if t.err != nil {
		return t.err
	}
	if _, err := bw.WriteString("\n]}\n"); err != nil {
		return err
	}
	return bw.Flush()
}

type tracer struct {
	w      *bufio.Writer
	origin int64 // Unix ns of the trace's time 0: the first entry
	first  bool
	err    error
	procs  map[int]*proc // by rank, -1 for a single trainer
	host   int           // the process host counters go to: the trainer's, or the lowest rank's
	hostRk *int          // the rank host counters go to; nil before any rank said hello
}

// proc is the trainer process frames of one rank (or the only trainer)
// come from: its process id in the trace and its stage list.
type proc struct {
	pid   int
	names []string
}

// rankPID is the trace's process id of rank r of a run: above any Linux pid
// (at most 2^22), so ranks that share a process (a simulation) or ranks on
// several hosts whose pids collide stay apart. The process name carries the
// real pid.
func rankPID(r int) int { return 1<<22 + r }

// proc returns the process of the entry's rank.
func (t *tracer) proc(rank *int) *proc {
	k := -1
	if rank != nil {
		k = *rank
	}
	p, ok := t.procs[k]
	if !ok {
		p = &proc{}
		t.procs[k] = p
	}
	return p
}

func (t *tracer) entry(e recording.Entry) {
	p := t.proc(e.Rank)
	switch {
	case e.Hello != nil:
		p.pid, p.names = e.Hello.PID, e.Hello.Stages
		if e.Rank != nil {
			p.pid = rankPID(*e.Rank)
		}
		if e.Rank == nil || t.hostRk == nil || *e.Rank <= *t.hostRk {
			t.host, t.hostRk = p.pid, e.Rank
		}
		t.meta(p.pid, e.Hello, e.Rank)
	case e.Host != nil:
		t.counters(e)
	case e.Frame == nil:
	case e.Frame.Type == ipc.TypeStages:
		p.names = e.Frame.Stages
	case e.Frame.Type == ipc.TypeSteps:
		for i := range e.Frame.Steps {
			t.step(p, &e.Frame.Steps[i])
		}
	case e.Frame.Type == ipc.TypeLoader && e.Frame.Loader != nil:
		t.loader(p, e.Frame.Loader)
	case e.Frame.Type == ipc.TypeEvent:
		ev := e.Frame.Event
		t.emit(Event{Name: ev.Kind, Cat: "event", Ph: "i", Ts: t.us(ev.TimeNs), PID: p.pid, TID: tidSteps,
			Args: map[string]any{"msg": ev.Msg, "s": "p"}})
	}
}

// meta names the process and its tracks; the ranks of a run are named and
// ordered by rank.
func (t *tracer) meta(pid int, h *ipc.Hello, rank *int) {
	name := fmt.Sprintf("%s (pid %d)", h.Name, h.PID)
	if rank != nil {
		name = fmt.Sprintf("rank %d: %s (pid %d)", *rank, h.Name, h.PID)
		t.emit(Event{Name: "process_sort_index", Ph: "M", PID: pid, Args: map[string]any{"sort_index": *rank}})
	}
	t.emit(Event{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": name}})
	t.emit(Event{Name: "thread_name", Ph: "M", PID: pid, TID: tidSteps, Args: map[string]any{"name": "steps (CPU)"}})
	t.emit(Event{Name: "thread_name", Ph: "M", PID: pid, TID: tidGPU, Args: map[string]any{"name": "GPU (CUDA events)"}})
}

// step emits the step slice of process p and its stages, CPU and GPU.
func (t *tracer) step(p *proc, r *stage.Record) {
	wall := float64(r.WallNs()) / 1e3
	args := map[string]any{"samples": r.Samples}
	if r.HasLoss {
		args["loss"] = r.Loss
	}
	t.emit(Event{Name: "step " + strconv.FormatInt(r.Step, 10), Cat: "step", Ph: "X", Ts: t.us(r.StartNs), Dur: &wall,
		PID: p.pid, TID: tidSteps, Args: args})
	t.lay(p, r, r.CPU[:r.NumStages], tidSteps, "stage")
	if r.HasGPU() {
		t.lay(p, r, r.GPU[:r.NumStages], tidGPU, "gpu")
	}
}

// lay emits the stage times end to end from the step's start, clipped to
// the step.
func (t *tracer) lay(p *proc, r *stage.Record, times []int64, tid int, cat string) {
	at, end := r.StartNs, r.EndNs
	for k, ns := range times {
		if ns <= 0 || at >= end {
			continue
		}
		ns = min(ns, end-at)
		d := float64(ns) / 1e3
		t.emit(Event{Name: p.name(k), Cat: cat, Ph: "X", Ts: t.us(at), Dur: &d, PID: p.pid, TID: tid})
		at += ns
	}
}

func (p *proc) name(k int) string {
	if k < len(p.names) {
		return p.names[k]
	}
	return "stage " + strconv.Itoa(k)
}

// counters emits each device's activity and memory, and the CPU, at one
// refresh; a recorded part that does not decode gives no counters.
func (t *tracer) counters(e recording.Entry) {
	var s snapshot.Snapshot
	_ = monitor.LoadReadings(e.Host, &s, sources.Parts()) // what decoded is still drawn
	for _, d := range s.GPU.Devices {
		args := map[string]any{}
		for name, r := range map[string]*float64{"sm_activity %": d.Readings[gpumetric.SMActivity].Value, "kernel_active %": d.Readings[gpumetric.KernelActive].Value} {
			if r != nil {
				args[name] = *r
			}
		}
		if len(args) > 0 {
			t.emit(Event{Name: fmt.Sprintf("GPU %d activity", d.Index), Ph: "C", Ts: t.us(e.T.UnixNano()), PID: t.host, Args: args})
		}
		if v := d.Readings[gpumetric.MemUsed].Value; v != nil {
			t.emit(Event{Name: fmt.Sprintf("GPU %d memory", d.Index), Ph: "C", Ts: t.us(e.T.UnixNano()), PID: t.host,
				Args: map[string]any{"used bytes": *v}})
		}
	}
	if v := s.CPU.Total.Value; v != nil {
		t.emit(Event{Name: "CPU busy", Ph: "C", Ts: t.us(e.T.UnixNano()), PID: t.host, Args: map[string]any{"all cores %": *v}})
	}
}

// loader emits the loader's counters of process p at the time of its
// statistics.
func (t *tracer) loader(p *proc, l *stage.LoaderStats) {
	ts := t.us(l.TimeNs)
	t.emit(Event{Name: "loader queue", Ph: "C", Ts: ts, PID: p.pid,
		Args: map[string]any{"ready batches": l.QueueDepth, "capacity": l.QueueCap}})
	t.emit(Event{Name: "loader workers busy", Ph: "C", Ts: ts, PID: p.pid, Args: map[string]any{"mean %": 100 * l.WorkerBusy}})
	for i, b := range l.WorkerBusyEach {
		t.emit(Event{Name: fmt.Sprintf("loader worker %d busy", i), Ph: "C", Ts: ts, PID: p.pid, Args: map[string]any{"%": 100 * b}})
	}
}

func (t *tracer) emit(e Event) {
	if t.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.err = fmt.Errorf("encode trace event: %w", err)
		return
	}
	if !t.first {
		t.w.WriteString(",\n")
	}
	t.first = false
	if _, err := t.w.Write(b); err != nil {
		t.err = fmt.Errorf("write trace: %w", err)
	}
}

// us converts Unix nanoseconds to trace microseconds since the origin:
// small numbers keep a float64 exact to the nanosecond.
func (t *tracer) us(ns int64) float64 { return float64(ns-t.origin) / 1e3 }

// WriteFile writes the trace-event JSON of the recording at path to the
// file out. A damaged recording is traced up to the damage, said on log.
func WriteFile(path, out string, log io.Writer) error {
	_, es, err := recording.ReadAll(path)
	if es == nil && err != nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(log, "pipetop: %v; tracing up to there\n", err)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if err := Write(f, es); err != nil {
		f.Close()
		return fmt.Errorf("write trace %s: %w", out, err)
	}
	return f.Close()
}
