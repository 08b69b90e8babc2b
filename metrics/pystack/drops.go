package pystack

import (
	"errors"
	"fmt"
)

// DropReason says why a thread's stack was dropped.
type DropReason string

// Why a stack is dropped. Each is a read that raced the interpreter (or
// memory that is not what the layout says), never an error of the caller.
const (
	// DropFault: a read failed (an address no longer mapped, a read cut
	// short): the frame or object was freed while the reader followed it.
	DropFault DropReason = "fault"
	// DropRace: a pointer led to something other than what it should
	// (not a code object, not a str, an instruction outside its code):
	// the interpreter moved on mid-read.
	DropRace DropReason = "race"
	// DropCycle: the frame chain came back to a frame it had passed.
	DropCycle DropReason = "cycle"
	// DropDepth: the chain was deeper than MaxDepth frames.
	DropDepth DropReason = "depth"
)

// Drops counts the stacks a Process dropped since Attach, by reason, and
// the reads of the thread list that found it changing (List).
type Drops struct {
	Fault uint64 `json:"fault"`
	Race  uint64 `json:"race"`
	Cycle uint64 `json:"cycle"`
	Depth uint64 `json:"depth"`
	List  uint64 `json:"list"`
}

// Total is every dropped stack and list.
func (d Drops) Total() uint64 { return d.Fault + d.Race + d.Cycle + d.Depth + d.List }

// add counts one drop for reason.
func (d *Drops) add(reason DropReason) {
	switch reason {
	case DropFault:
		d.Fault++
	case DropRace:
		d.Race++
	case DropCycle:
		d.Cycle++
	case DropDepth:
		d.Depth++
	}
}

// dropError is a read that raced the interpreter: the stack it was part
// of is dropped for reason.
type dropError struct {
	reason DropReason
	err    error
}

func (e *dropError) Error() string { return fmt.Sprintf("%s: %v", e.reason, e.err) }

func (e *dropError) Unwrap() error { return e.err }

// raced is a DropRace error.
func raced(format string, args ...any) error {
	return &dropError{DropRace, fmt.Errorf(format, args...)}
}

// reasonOf is why err drops a stack: its dropError's reason, DropFault for
// a failed read (or anything else).
func reasonOf(err error) DropReason {
	var de *dropError
	if errors.As(err, &de) {
		return de.reason
	}
	return DropFault
}

// ErrListChanged is a read of the thread list that found it changing (a
// thread starting or ending mid-read, or a list that is not one); the
// read is dropped and counted (Drops.List): read again.
var ErrListChanged = errors.New("the thread list changed during the read")
