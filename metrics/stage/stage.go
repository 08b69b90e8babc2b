// Package stage is the shared vocabulary of pipetop: the names of the stages
// of a training step, the per-step record, the span timer that fills it on
// the training thread, rolling aggregates over a window of steps, and the
// verdict rules that turn those aggregates into plain words.
//
// The trainer, the viewer and bisect all use this one implementation.
package stage

// Canonical stage names, in critical-path order. Custom names are allowed;
// these get fixed colours and are what the verdict rules know about.
const (
	DataWait = "data_wait" // waiting for the next batch from the loader
	H2D      = "h2d"       // host-to-device copy
	Forward  = "forward"   // encoder + policy + loss
	Backward = "backward"  // gradient computation
	Optim    = "optim"     // optimizer step + zero_grad
	Sync     = "sync"      // explicit synchronization, loss readback, logging
	Other    = "other"     // the rest of the step's wall time
)

// Canonical lists the canonical stages in critical-path order.
var Canonical = []string{DataWait, H2D, Forward, Backward, Optim, Sync, Other}

// MaxStages is the most stages one record can carry.
const MaxStages = 16

// IsCanonical reports whether name is one of the canonical stage names.
func IsCanonical(name string) bool {
	for _, c := range Canonical {
		if c == name {
			return true
		}
	}
	return false
}

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
