// Package ipc is pipetop's wire protocol and its two ends: the server that a
// trainer runs and the client that a viewer uses. Frames are newline-
// delimited JSON objects over a Unix stream socket; docs/protocol.md is the
// specification.
package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/pipetop/pipetop/metrics/stage"
)

// Version is the protocol version this package speaks.
const Version = 1

// MaxFrame is the largest frame, newline included, either side accepts:
// 1 MiB, far above the largest frame a trainer sends (512 steps, or a hello
// with its 64 KiB config), and small enough that a hostile peer costs a
// viewer little memory.
const MaxFrame = 1 << 20

// capText is MaxFrame as people read it.
const capText = "1 MiB"

// Frame types.
const (
	TypeHello  = "hello"  // first frame of each side
	TypeStages = "stages" // the stage list changed
	TypeSteps  = "steps"  // one or more step records
	TypeLoader = "loader" // loader statistics
	TypeEvent  = "event"  // checkpoint, epoch, phase, warning, ...
	// TypeProgress says where the loop is right now; sent only to viewers
	// whose hello lists it in Accepts.
	TypeProgress = "progress"
	TypeDrops    = "drops" // frames the server dropped for this viewer
	TypeError    = "error" // the sender is closing the connection because of this

	// TypeStacks carries folded stack samples (the Python instrumentation's);
	// sent only to viewers whose hello lists it in Accepts.
	TypeStacks = "stacks"

	// TypeAgg carries one interval's steps as a stage.Aggregate instead
	// of one record each; sent only to viewers whose hello lists it in
	// Accepts, and to those instead of steps frames.
	TypeAgg = "agg"

	// AcceptAggBrief in a viewer's Accepts, beside TypeAgg, asks for
	// brief aggregates (stage.Aggregate.Brief: the wall time's bins, every
	// other column's count and sum, no waits): a run's view takes them of
	// the ranks it shows in brief, a tenth of the bytes to read and parse.
	AcceptAggBrief = "agg-brief"
)

// Hello introduces a trainer to a viewer (or a viewer to a trainer, where
// only Role and the frame version matter).
type Hello struct {
	Role    string `json:"role,omitempty"` // "trainer" or "viewer"
	Name    string `json:"name,omitempty"`
	PID     int    `json:"pid,omitempty"`
	HostPID int    `json:"host_pid,omitempty"` // pid in the outermost visible namespace (NSpid)
	StartNs int64  `json:"start_ns,omitempty"` // process start, Unix ns
	// TID is the training thread's id (a trainer's hello only; Linux
	// gettid, in the trainer's pid namespace), so that viewers can tell it
	// from the compute pools; 0 when the trainer does not say.
	TID    int             `json:"tid,omitempty"`
	Config json.RawMessage `json:"config,omitempty"` // free-form trainer configuration
	Stages []string        `json:"stages,omitempty"`
	// Rank is the process's rank in a multi-process run (nil for a
	// single-process trainer), WorldSize the number of ranks and Run the
	// run's identifier, the same on every rank (e.g. torchrun's
	// TORCHELASTIC_RUN_ID). All three are optional.
	Rank      *int   `json:"rank,omitempty"`
	WorldSize int    `json:"world_size,omitempty"`
	Run       string `json:"run,omitempty"`
	// Accepts lists the optional frame types a viewer understands (a
	// viewer's hello only); the server sends those types to it alone.
	Accepts []string `json:"accepts,omitempty"`
	// BatchMs (a viewer's hello only) asks the trainer to hold frames for
	// this viewer up to that many milliseconds and send what gathered in
	// one write: a viewer that redraws once a second needs no more than a
	// wake-up or two per second, however fast the steps come. 0 sends each
	// frame as it is ready. Trainers cap it at MaxBatchMs.
	BatchMs int `json:"batch_ms,omitempty"`
	// StageWord (a trainer's hello only) is where pipetop's stack sampler
	// reads the stage of the trainer's stack samples from outside the
	// process; nil when the trainer samples its own stacks.
	StageWord *StageWord `json:"stage_word,omitempty"`
	// StacksInside (a viewer's hello only) asks a trainer that announced
	// a StageWord to sample its own stacks: the viewer's read from
	// outside is refused, for this reason.
	StacksInside string `json:"stacks_inside,omitempty"`
}

// StageWord locates the block of a trainer process that says what its
// stack samples belong to (docs/protocol.md, stage_word): eight
// little-endian 64-bit words at Addr, the second the training thread's
// stage (0: other, i+1: Stages[i]); a DataLoader worker forked from it
// holds its own at the same address.
type StageWord struct {
	Addr   uint64   `json:"addr"`
	Stages []string `json:"stages"`
}

// Limits of a stage word.
const (
	MaxWordStages = 64
	maxWordStage  = 64 // bytes of a stage name
)

func (w *StageWord) validate() error {
	if w.Addr == 0 || w.Addr%8 != 0 || len(w.Stages) > MaxWordStages {
		return fmt.Errorf("hello stage_word: address %#x, %d stages (want an aligned address, at most %d stages)", w.Addr, len(w.Stages), MaxWordStages)
	}
	for _, s := range w.Stages {
		if s == "" || len(s) > maxWordStage {
			return fmt.Errorf("hello stage_word: a stage name of %d bytes (want 1 to %d)", len(s), maxWordStage)
		}
	}
	return nil
}

// MaxBatchMs is the longest hold a viewer's BatchMs may ask for.
const MaxBatchMs = 2000

// MaxRunLen is the longest run identifier a hello may carry.
const MaxRunLen = 128

// validate checks the optional rank fields.
func (h *Hello) validate() error {
	switch {
	case h.Rank != nil && *h.Rank < 0:
		return fmt.Errorf("hello rank %d: want 0 or more", *h.Rank)
	case h.TID < 0:
		return fmt.Errorf("hello tid %d: want 0 or more", h.TID)
	case h.WorldSize < 0:
		return fmt.Errorf("hello world_size %d: want 0 or more", h.WorldSize)
	case h.Rank != nil && h.WorldSize > 0 && *h.Rank >= h.WorldSize:
		return fmt.Errorf("hello rank %d: not below world_size %d", *h.Rank, h.WorldSize)
	case len(h.Run) > MaxRunLen:
		return fmt.Errorf("hello run: %d bytes, want at most %d", len(h.Run), MaxRunLen)
	case len(h.StacksInside) > maxInsideLen:
		return fmt.Errorf("hello stacks_inside: %d bytes, want at most %d", len(h.StacksInside), maxInsideLen)
	case h.StageWord != nil:
		return h.StageWord.validate()
	}
	return nil
}

// maxInsideLen is the longest reason a viewer's StacksInside may give.
const maxInsideLen = 512

// Accepting reports whether a viewer's hello lists frame type typ.
func (h *Hello) Accepting(typ string) bool {
	return h != nil && slices.Contains(h.Accepts, typ)
}

// wireStep is the JSON form of one step record, for encoding/json: the
// fast paths (appendSteps, decodeStepsFast) write and read the same form
// straight from and into stage.Record. CPU and GPU are indexed like the
// most recent stage list; a GPU value of -1 means unknown; n counts samples.
type wireStep struct {
	Step int64    `json:"step"`
	T0   int64    `json:"t0"`
	T1   int64    `json:"t1"`
	N    int32    `json:"n"`
	Loss *float32 `json:"loss,omitempty"`
	CPU  []int64  `json:"cpu"`
	GPU  []int64  `json:"gpu,omitempty"`
}

// Event is something that happened once: a checkpoint, an epoch, a phase
// change, a warning.
type Event struct {
	TimeNs int64  `json:"t"`
	Kind   string `json:"kind"`
	Msg    string `json:"msg,omitempty"`
}

// Frame is one protocol message. Type says which of the other fields is set.
type Frame struct {
	Type   string             `json:"type"`
	V      int                `json:"v,omitempty"` // protocol version, in hello frames
	Hello  *Hello             `json:"hello,omitempty"`
	Stages []string           `json:"stages,omitempty"`
	Steps  []stage.Record     `json:"-"` // steps and backfill frames; on the wire as "steps"
	Loader *stage.LoaderStats `json:"loader,omitempty"`
	Event  *Event             `json:"event,omitempty"`
	// Progress is set in progress frames.
	Progress *stage.Progress `json:"progress,omitempty"`
	Dropped  int64           `json:"dropped,omitempty"`
	Error    string          `json:"error,omitempty"`

	// Stacks is set in stacks frames.
	Stacks *stage.StackSamples `json:"stacks,omitempty"`

	// Agg is set in agg frames.
	Agg *stage.Aggregate `json:"agg,omitempty"`
}

// ErrVersion is wrapped by errors about a peer speaking another version.
var ErrVersion = errors.New("protocol version mismatch")

// DecodeFrame parses one frame (without its newline). Unknown fields are
// ignored, and so are frames of unknown types: they decode with only Type
// set, and readers skip them (later versions may add types). A frame
// without a type, or whose payload does not match its known type, is an
// error.
func DecodeFrame(line []byte) (*Frame, error) {
	if len(line) > MaxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds the %s (%d-byte) limit", len(line), capText, MaxFrame)
	}
	f, err := decodeFast(line)
	if err != nil {
		f = &Frame{}
		if err := json.Unmarshal(line, f); err != nil {
			return nil, fmt.Errorf("decode frame %q: %w", clip(line), err)
		}
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("frame %q: %w", clip(line), err)
	}
	return f, nil
}

func (f *Frame) validate() error {
	switch f.Type {
	case TypeHello:
		if f.V != Version {
			return fmt.Errorf("%w: peer speaks v%d, this side speaks v%d", ErrVersion, f.V, Version)
		}
		if f.Hello == nil {
			return errors.New("hello frame without hello")
		}
		if err := f.Hello.validate(); err != nil {
			return err
		}
	case TypeStages:
		if len(f.Stages) == 0 || len(f.Stages) > stage.MaxStages {
			return fmt.Errorf("stages frame with %d stages (want 1..%d)", len(f.Stages), stage.MaxStages)
		}
	case TypeSteps, TypeBackfill:
		for i := range f.Steps {
			if err := validateStep(&f.Steps[i]); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
	case TypeLoader:
		if f.Loader == nil {
			return errors.New("loader frame without loader")
		}
	case TypeEvent:
		if f.Event == nil {
			return errors.New("event frame without event")
		}
	case TypeProgress:
		return validateProgress(f.Progress)
	case TypeStacks:
		return f.Stacks.Validate()
	case TypeAgg:
		if f.Agg == nil {
			return errors.New("agg frame without agg")
		}
		return f.Agg.Validate()
	case TypeDrops, TypeError:
	case "":
		return errors.New("missing type")
	default:
		*f = Frame{Type: f.Type} // a later version's frame: keep only its type
	}
	return nil
}

// MaxStageName is the longest stage name a progress frame may carry.
const MaxStageName = 256

func validateProgress(p *stage.Progress) error {
	switch {
	case p == nil:
		return errors.New("progress frame without progress")
	case p.Step < -1:
		return fmt.Errorf("progress step %d (want -1 or more)", p.Step)
	case len(p.Stage) > MaxStageName:
		return fmt.Errorf("progress stage name of %d bytes (at most %d)", len(p.Stage), MaxStageName)
	case p.SinceNs < 0 || p.StepStartNs < 0 || p.Done < 0:
		return errors.New("progress with a negative time or count")
	}
	return nil
}

func validateStep(r *stage.Record) error {
	if r.NumStages > stage.MaxStages {
		return fmt.Errorf("more than %d stage times", stage.MaxStages)
	}
	if r.EndNs < r.StartNs {
		return fmt.Errorf("t1 %d before t0 %d", r.EndNs, r.StartNs)
	}
	for _, v := range r.CPU[:r.NumStages] {
		if v < 0 {
			return fmt.Errorf("negative cpu time %d", v)
		}
	}
	return nil
}

// record converts a wire step into a stage record; ok is false when it
// carries more stage times than a record holds.
func (s *wireStep) record() (r stage.Record, ok bool) {
	if len(s.CPU) > stage.MaxStages || len(s.GPU) > stage.MaxStages {
		return r, false
	}
	r = stage.RecordOf(s.Step, s.T0, s.T1, s.N, s.CPU, s.GPU)
	if s.Loss != nil {
		r.HasLoss, r.Loss = true, *s.Loss
	}
	return r, true
}

// frameJSON is a Frame as encoding/json reads and writes it: the steps in
// their wire form.
type frameJSON struct {
	*frameFields
	Steps []wireStep `json:"steps,omitempty"`
}

type frameFields Frame

// MarshalJSON writes f with its steps in the wire form.
func (f *Frame) MarshalJSON() ([]byte, error) {
	j := frameJSON{frameFields: (*frameFields)(f)}
	for i := range f.Steps {
		r := &f.Steps[i]
		w := wireStep{Step: r.Step, T0: r.StartNs, T1: r.EndNs, N: r.Samples, CPU: append([]int64{}, r.CPU[:r.NumStages]...)}
		if r.HasLoss {
			loss := r.Loss
			w.Loss = &loss
		}
		if r.HasGPU() {
			w.GPU = append([]int64(nil), r.GPU[:r.NumStages]...)
		}
		j.Steps = append(j.Steps, w)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads f with its steps in the wire form.
func (f *Frame) UnmarshalJSON(b []byte) error {
	j := frameJSON{frameFields: (*frameFields)(f)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	f.Steps = f.Steps[:0]
	for i := range j.Steps {
		r, ok := j.Steps[i].record()
		if !ok {
			return fmt.Errorf("step %d: more than %d stage times", i, stage.MaxStages)
		}
		f.Steps = append(f.Steps, r)
	}
	if len(f.Steps) == 0 {
		f.Steps = nil
	}
	return nil
}

func clip(b []byte) string {
	const n = 80
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// AppendFrame appends f as one protocol line, JSON and a newline, to dst;
// a steps frame takes the compact form that viewers decode fastest.
func AppendFrame(dst []byte, f *Frame) []byte {
	if f.Type == TypeSteps || f.Type == TypeBackfill {
		return appendStepFrame(dst, f.Type, f.Steps)
	}
	return appendJSON(dst, f)
}

// appendJSON appends v as JSON and a newline to dst.
func appendJSON(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own frame types are marshalled; they always encode.
		panic(fmt.Sprintf("ipc: encode frame: %v", err))
	}
	return append(append(dst, b...), '\n')
}

// appendSteps appends a steps frame holding recs, without reflection: this
// runs for every published step.
func appendSteps(dst []byte, recs []stage.Record) []byte {
	return appendStepFrame(dst, TypeSteps, recs)
}

// appendStepFrame appends a frame of type typ whose steps are recs.
func appendStepFrame(dst []byte, typ string, recs []stage.Record) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","steps":[`...)
	for i := range recs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendStep(dst, &recs[i])
	}
	return append(dst, "]}\n"...)
}

func appendStep(dst []byte, r *stage.Record) []byte {
	dst = append(dst, `{"step":`...)
	dst = strconv.AppendInt(dst, r.Step, 10)
	dst = append(dst, `,"t0":`...)
	dst = strconv.AppendInt(dst, r.StartNs, 10)
	dst = append(dst, `,"t1":`...)
	dst = strconv.AppendInt(dst, r.EndNs, 10)
	dst = append(dst, `,"n":`...)
	dst = strconv.AppendInt(dst, int64(r.Samples), 10)
	if r.HasLoss && !math.IsNaN(float64(r.Loss)) && !math.IsInf(float64(r.Loss), 0) {
		dst = append(dst, `,"loss":`...)
		dst = strconv.AppendFloat(dst, float64(r.Loss), 'g', -1, 32)
	}
	dst = append(dst, `,"cpu":`...)
	dst = appendInts(dst, r.CPU[:r.NumStages])
	if r.HasGPU() {
		dst = append(dst, `,"gpu":`...)
		dst = appendInts(dst, r.GPU[:r.NumStages])
	}
	return append(dst, '}')
}

func appendInts(dst []byte, v []int64) []byte {
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, x, 10)
	}
	return append(dst, ']')
}
