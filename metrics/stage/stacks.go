package stage

import (
	"errors"
	"fmt"
)

// StackSamples is the body of a stacks frame: the stack samples a
// publisher folded since its previous frame (the Python instrumentation's
// training thread, tagged with the stage it was in, and each DataLoader
// worker's fetch). Rows hold indices into Frames, root first.
type StackSamples struct {
	// TimeNs is when the samples were taken up to (Unix ns).
	TimeNs int64 `json:"t"`
	// IntervalNs is the wall time the frame covers; 0 for a whole run.
	IntervalNs int64 `json:"interval_ns"`
	// Hz is the rate the stack sampler runs at.
	Hz float64 `json:"hz"`
	// Frames are the code locations the rows name.
	Frames []CodeFrame `json:"frames"`
	// Rows are the folded stacks with their sample counts.
	Rows []StackRow `json:"rows"`
	// Lost counts samples the workers could not deliver.
	Lost int64 `json:"lost,omitempty"`
	// Dropped counts the stacks a reader from outside the process dropped
	// because its read raced the interpreter (metrics/pystack.Drops).
	Dropped int64 `json:"dropped,omitempty"`
	// Threads are the trainer process's other Python threads; absent from
	// publishers that do not sample them.
	Threads []ThreadSamples `json:"threads,omitempty"`
	// IntraOpThreads and InterOpThreads are torch's thread counts in the
	// trainer process (torch.get_num_threads(),
	// torch.get_num_interop_threads()); 0 when unknown.
	IntraOpThreads int `json:"intra_op_threads,omitempty"`
	InterOpThreads int `json:"inter_op_threads,omitempty"`
}

// CodeFrame is one function at one line.
type CodeFrame struct {
	// Name is the function's (qualified) name.
	Name string `json:"name"`
	// File is its file, short: relative to the package root for a library
	// (zarr/core.py), to the working directory for the user's own code.
	File string `json:"file"`
	// Line is the line the sample found it at.
	Line int `json:"line"`
	// Lib is the library (top-level package or standard module) the file
	// belongs to; empty for the user's own code.
	Lib string `json:"lib,omitempty"`
}

// User reports whether f is the user's own code (not a library, not a
// placeholder such as the row of stacks that did not fit).
func (f CodeFrame) User() bool { return f.Lib == "" && f.File != "" }

// Roles of stack samples.
const (
	RoleTrain  = "train"  // the training thread
	RoleWorker = "worker" // a DataLoader worker's fetch
)

// SlowFetch is the stage of a worker's samples in a fetch that has lasted
// four times the worker's median fetch (and 20 ms): what a stall of the
// loop waits for, told from the usual fetches (the Python publisher's
// workers.SLOW_FETCH).
const SlowFetch = "slow-fetch"

// StackRow is one folded stack: the samples that found this stack, with
// the wall time they stand for.
type StackRow struct {
	// Role is RoleTrain or RoleWorker (other roles are kept as they come).
	Role string `json:"role"`
	// Worker is the worker's id (role worker only).
	Worker *int `json:"worker,omitempty"`
	// Stage is the stage the training thread was in; for a worker,
	// SlowFetch or empty.
	Stage string `json:"stage,omitempty"`
	// Stack indexes Frames, outermost call first.
	Stack []int `json:"stack"`
	// N counts the samples, Ns the wall time they stand for (each sample
	// stands for the time since the stack sampler's previous one).
	N  int64 `json:"n"`
	Ns int64 `json:"ns"`
}

// Limits of a stacks frame: a viewer refuses larger ones.
const (
	MaxStackFrames = 16384 // frames of one stacks frame
	MaxStackRows   = 8192  // rows of one stacks frame
	MaxStackDepth  = 256   // frames of one stack
	MaxCodeText    = 1024  // bytes of a name, file, lib, role or stage
)

// Validate checks the indices, counts and lengths of s.
func (s *StackSamples) Validate() error {
	switch {
	case s == nil:
		return errors.New("stacks frame without stacks")
	case len(s.Frames) > MaxStackFrames:
		return fmt.Errorf("stacks: %d frames (at most %d)", len(s.Frames), MaxStackFrames)
	case len(s.Rows) > MaxStackRows:
		return fmt.Errorf("stacks: %d rows (at most %d)", len(s.Rows), MaxStackRows)
	case s.TimeNs < 0 || s.IntervalNs < 0 || s.Lost < 0 || s.Dropped < 0:
		return errors.New("stacks: a negative time or count")
	case s.Hz < 0 || s.Hz != s.Hz:
		return fmt.Errorf("stacks: hz %v (want 0 or more)", s.Hz)
	}
	for i, f := range s.Frames {
		if len(f.Name) > MaxCodeText || len(f.File) > MaxCodeText || len(f.Lib) > MaxCodeText {
			return fmt.Errorf("stacks: frame %d: a name, file or lib over %d bytes", i, MaxCodeText)
		}
		if f.Line < 0 {
			return fmt.Errorf("stacks: frame %d: line %d", i, f.Line)
		}
	}
	for i := range s.Rows {
		if err := s.validRow(&s.Rows[i]); err != nil {
			return fmt.Errorf("stacks: row %d: %w", i, err)
		}
	}
	return s.validThreads()
}

func (s *StackSamples) validRow(r *StackRow) error {
	switch {
	case r.Role == "" || len(r.Role) > MaxCodeText || len(r.Stage) > MaxCodeText:
		return fmt.Errorf("role %q, stage of %d bytes (want a role, both at most %d bytes)", clipText(r.Role), len(r.Stage), MaxCodeText)
	case r.Worker != nil && *r.Worker < 0:
		return fmt.Errorf("worker %d", *r.Worker)
	case r.N < 0 || r.Ns < 0:
		return fmt.Errorf("negative count %d or time %d", r.N, r.Ns)
	case len(r.Stack) > MaxStackDepth:
		return fmt.Errorf("%d frames deep (at most %d)", len(r.Stack), MaxStackDepth)
	}
	for _, j := range r.Stack {
		if j < 0 || j >= len(s.Frames) {
			return fmt.Errorf("frame index %d out of range (%d frames)", j, len(s.Frames))
		}
	}
	return nil
}

// clipText shortens s for an error message.
func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Samples sums the rows' sample counts and times.
func (s *StackSamples) Samples() (n, ns int64) {
	for _, r := range s.Rows {
		n += r.N
		ns += r.Ns
	}
	return n, ns
}
