// Package stage is pipetop's measuring and its shared vocabulary: the
// names of the stages of a training step and their classes (the stage
// table), the per-step record, the span timer that fills it on the
// training thread, the step ring and the summaries of a window of steps,
// the agg frame's aggregates and sketches, a trainer's totals, the loader's
// statistics, the in-flight step, the data_wait pattern and the stack
// samples' profile.
//
// The trainer, the viewer and bisect all use this one implementation.
// Judging what it measures is metrics/verdict's, which imports this package;
// this package never imports it.
package stage

import "slices"

// Stage names with a fixed meaning, in critical-path order. Custom names
// are allowed; these get fixed colours and are what the verdict rules know
// about.
const (
	DataWait   = "data_wait"  // waiting for the next batch from the loader
	Preprocess = "preprocess" // transforms and augmentation on the training thread, outside the model
	H2D        = "h2d"        // host-to-device copy
	Forward    = "forward"    // encoder + policy + loss
	Backward   = "backward"   // gradient computation
	Comm       = "comm"       // gradient all-reduce and other collectives (multi-rank)
	Optim      = "optim"      // optimizer step + zero_grad
	Sync       = "sync"       // explicit synchronization, loss readback, logging
	Other      = "other"      // the rest of the step's wall time
	Eval       = "eval"       // evaluation passes outside training steps
)

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

// Scope says in which steps a stage with a fixed meaning is timed.
type Scope int

// Stage scopes.
const (
	ScopeStep    Scope = iota // every training step
	ScopeRanks                // the steps of one rank of a multi-rank run
	ScopeOutside              // outside training steps (evaluation)
	// ScopeLoop stages are timed in training steps of the loops that have
	// them (preprocessing on the training thread); no fixed stage list
	// holds them, a publisher adds them when it first times one.
	ScopeLoop
)

// Info describes one stage with a fixed meaning.
type Info struct {
	Name  string
	Class Class
	Scope Scope
	// Core marks the stages every training loop has: summaries list them
	// even when they took no time.
	Core bool
	// Short is the stage's column label in bisect's table (4 characters
	// at most).
	Short string
	// Color is the stage's fixed colour in the flame bar, "#RRGGBB".
	Color string
	Help  string // one line for help screens and docs
}

// Known is the one table of stages with a fixed meaning, in critical-path
// order: the Go trainer's stage lists, the verdict's classes, bisect's
// columns, the screen's colours and the Python publisher's stage module
// (clients/python, generated from it) all come from here. data_wait gets
// the warm colour that draws the eye: waiting for input is the most common
// bottleneck.
var Known = []Info{
	{DataWait, ClassInput, ScopeStep, true, "wait", "#E5734B", "waiting for the next batch from the loader"},
	{Preprocess, ClassInput, ScopeLoop, false, "prep", "#B5835A", "transforms and augmentation on the training thread, outside the model"},
	{H2D, ClassNetwork, ScopeStep, false, "h2d", "#E5C07B", "host-to-device copy of the batch"},
	{Forward, ClassNetwork, ScopeStep, true, "fwd", "#61AFEF", "encoder + policy + loss"},
	{Backward, ClassNetwork, ScopeStep, true, "bwd", "#C678DD", "gradient computation"},
	{Comm, ClassComm, ScopeRanks, false, "comm", "#E8A33D", "gradient all-reduce and other collectives"},
	{Optim, ClassNetwork, ScopeStep, true, "opt", "#56B6C2", "optimizer step and zero_grad"},
	{Sync, ClassSync, ScopeStep, false, "sync", "#E06C9F", "explicit synchronization, loss readback, logging"},
	{Other, ClassOther, ScopeStep, true, "oth", "#7F848E", "the rest of the step's wall time"},
	{Eval, ClassEval, ScopeOutside, false, "eval", "#5FAF87", "evaluation passes outside training steps"},
}

// Canonical lists the stages a single-process training step is timed in,
// in critical-path order: the stage list of the Go trainer's timer. Comm
// joins it on multi-rank runs; eval is outside steps.
var Canonical = namesIn(ScopeStep)

// MultiRank lists the stages a step of one rank of a multi-rank run is
// timed in: Canonical with comm (the gradient all-reduce) after backward.
var MultiRank = namesIn(ScopeStep, ScopeRanks)

// namesIn lists the names of the known stages of the given scopes, in
// table order.
func namesIn(scopes ...Scope) []string {
	var names []string
	for _, k := range Known {
		if slices.Contains(scopes, k.Scope) {
			names = append(names, k.Name)
		}
	}
	return names
}

// InfoOf returns the table row of a known stage; ok is false for a name
// the table does not list.
func InfoOf(name string) (Info, bool) {
	for _, k := range Known {
		if k.Name == name {
			return k, true
		}
	}
	return Info{}, false
}

// ClassOf returns the class of a stage name; ClassCustom for names Known
// does not list.
func ClassOf(name string) Class {
	if k, ok := InfoOf(name); ok {
		return k.Class
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
