// Package stage is the shared vocabulary of pipetop: the names of the stages
// of a training step, the per-step record, the span timer that fills it on
// the training thread, rolling aggregates over a window of steps, and the
// verdict rules that turn those aggregates into plain words.
//
// The trainer, the viewer and bisect all use this one implementation.
package stage

// Stage names with a fixed meaning, in critical-path order. Custom names
// are allowed; these get fixed colours and are what the verdict rules know
// about.
const (
	DataWait = "data_wait" // waiting for the next batch from the loader
	H2D      = "h2d"       // host-to-device copy
	Forward  = "forward"   // encoder + policy + loss
	Backward = "backward"  // gradient computation
	Comm     = "comm"      // gradient all-reduce and other collectives (multi-rank)
	Optim    = "optim"     // optimizer step + zero_grad
	Sync     = "sync"      // explicit synchronization, loss readback, logging
	Other    = "other"     // the rest of the step's wall time
	Eval     = "eval"      // evaluation passes outside training steps
)

// Canonical lists the stages a single-process training step is timed in,
// in critical-path order: the stage list of the Go trainer's timer. Comm
// joins it on multi-rank runs; eval is outside steps.
var Canonical = []string{DataWait, H2D, Forward, Backward, Optim, Sync, Other}

// MultiRank lists the stages a step of one rank of a multi-rank run is
// timed in: Canonical with comm (the gradient all-reduce) after backward.
var MultiRank = []string{DataWait, H2D, Forward, Backward, Comm, Optim, Sync, Other}

// MaxStages is the most stages one record can carry.
const MaxStages = 16

// Class groups stages by what the step waits on in them. The verdict,
// bisect and the screen read a stage's class from Known, never from their
// own lists.
type Class string

// Stage classes.
const (
	ClassInput   Class = "input"   // waiting for data
	ClassNetwork Class = "network" // the model's own work: copy, forward, backward, optimizer
	ClassComm    Class = "comm"    // waiting for other ranks
	ClassSync    Class = "sync"    // the host waiting for the device
	ClassOther   Class = "other"   // untimed remainder of the step
	ClassEval    Class = "eval"    // evaluation, outside training steps
	ClassCustom  Class = "custom"  // a name this table does not know
)

// Info describes one stage with a fixed meaning.
type Info struct {
	Name  string
	Class Class
	Help  string // one line for help screens and docs
}

// Known is the one table of stages with a fixed meaning, in critical-path
// order.
var Known = []Info{
	{DataWait, ClassInput, "waiting for the next batch from the loader"},
	{H2D, ClassNetwork, "host-to-device copy of the batch"},
	{Forward, ClassNetwork, "encoder + policy + loss"},
	{Backward, ClassNetwork, "gradient computation"},
	{Comm, ClassComm, "gradient all-reduce and other collectives"},
	{Optim, ClassNetwork, "optimizer step and zero_grad"},
	{Sync, ClassSync, "explicit synchronization, loss readback, logging"},
	{Other, ClassOther, "the rest of the step's wall time"},
	{Eval, ClassEval, "evaluation passes outside training steps"},
}

// ClassOf returns the class of a stage name; ClassCustom for names Known
// does not list.
func ClassOf(name string) Class {
	for _, k := range Known {
		if k.Name == name {
			return k.Class
		}
	}
	return ClassCustom
}

// IsKnown reports whether name is a stage with a fixed meaning.
func IsKnown(name string) bool { return ClassOf(name) != ClassCustom }

// Record is one training step. Stage times are indexed like the stage list
// the record was made with (see Timer.Names); unknown GPU times are -1.
type Record struct {
	Step      int64 // step number, starting at 0 or at the resumed step
	StartNs   int64 // wall-clock start, Unix nanoseconds
	EndNs     int64 // wall-clock end, Unix nanoseconds
	Samples   int32 // samples processed in this step
	HasLoss   bool  // Loss is valid
	Loss      float32
	NumStages int // number of stages in CPU and GPU
	CPU       [MaxStages]int64
	GPU       [MaxStages]int64
}

// RecordOf builds a record from per-stage CPU times and GPU times (gpu may
// be shorter or nil: the missing ones are unknown). Times beyond MaxStages
// are dropped; callers that must refuse them check the lengths first.
func RecordOf(step, startNs, endNs int64, samples int32, cpu, gpu []int64) Record {
	r := Record{Step: step, StartNs: startNs, EndNs: endNs, Samples: samples, NumStages: min(len(cpu), MaxStages)}
	r.ClearGPU()
	copy(r.CPU[:], cpu)
	copy(r.GPU[:], gpu)
	return r
}

// WallNs is the step's wall time in nanoseconds.
func (r *Record) WallNs() int64 { return r.EndNs - r.StartNs }

// HasGPU reports whether any stage of r carries a GPU time.
func (r *Record) HasGPU() bool {
	for i := 0; i < r.NumStages; i++ {
		if r.GPU[i] >= 0 {
			return true
		}
	}
	return false
}

// GPUBusyNs is the sum of the known GPU stage times of r.
func (r *Record) GPUBusyNs() int64 {
	var sum int64
	for i := 0; i < r.NumStages; i++ {
		if r.GPU[i] > 0 {
			sum += r.GPU[i]
		}
	}
	return sum
}

// ClearGPU marks every GPU time of r unknown.
func (r *Record) ClearGPU() {
	for i := range r.GPU {
		r.GPU[i] = -1
	}
}
