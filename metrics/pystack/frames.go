package pystack

import (
	"fmt"
	"slices"
)

// Frame is one Python frame of a thread's stack.
type Frame struct {
	// Name is the function's qualified name (Class.method; 3.10: the
	// function's name alone).
	Name string `json:"name"`
	// File is the code's file name as the interpreter has it.
	File string `json:"file"`
	// Line is the line it is at; 0 when the line table has none.
	Line int `json:"line"`
}

// MaxDepth is the most frames of one stack; a longer chain is dropped
// (DropDepth).
const MaxDepth = 2048

// stack reads the frame chain from frame (the thread's current frame),
// innermost first, into the pass's frame arena. Frames that have not
// started yet and C shim frames are left out, as the interpreter's own
// f_back leaves them out.
func (p *Process) stack(frame uint64) ([]Frame, error) {
	p.chain = p.chain[:0]
	start := len(p.arena)
	for frame != 0 {
		if len(p.chain) == MaxDepth {
			p.arena = p.arena[:start]
			return nil, &dropError{DropDepth, fmt.Errorf("more than %d frames", MaxDepth)}
		}
		if !p.visit(frame) {
			p.arena = p.arena[:start]
			return nil, &dropError{DropCycle, fmt.Errorf("frame %#x twice in the chain", frame)}
		}
		f, keep, back, err := p.frame(frame)
		if err != nil {
			p.arena = p.arena[:start]
			return nil, err
		}
		if keep {
			p.arena = append(p.arena, f)
		}
		frame = back
	}
	if len(p.arena) == start {
		return nil, nil
	}
	return p.arena[start:len(p.arena):len(p.arena)], nil
}

// linearChain is how long a chain is checked for cycles by scanning it;
// a longer one is checked through a set.
const linearChain = 64

// visit adds frame to the chain being walked; false when the chain passed
// it already.
func (p *Process) visit(frame uint64) bool {
	switch n := len(p.chain); {
	case n < linearChain:
		if slices.Contains(p.chain, frame) {
			return false
		}
	default:
		if n == linearChain {
			clear(p.seen)
			for _, a := range p.chain {
				p.seen[a] = struct{}{}
			}
		}
		if _, ok := p.seen[frame]; ok {
			return false
		}
		p.seen[frame] = struct{}{}
	}
	p.chain = append(p.chain, frame)
	return true
}

// frame reads the frame at addr: what it shows, whether to show it, and
// the frame that called it.
func (p *Process) frame(addr uint64) (Frame, bool, uint64, error) {
	l := &p.lay
	b, err := p.read(addr, l.frameSize)
	if err != nil {
		return Frame{}, false, 0, err
	}
	back, codeAt, instr := le64(b, l.frameBack), le64(b, l.frameCode), le64(b, l.frameInstr)
	owner := int(byteAt(b, l.frameOwner))
	if l.frameOwner >= 0 && owner == ownedByCStack && l.minor >= 12 {
		return Frame{}, false, back, nil
	}
	c, err := p.code(codeAt)
	if err != nil {
		return Frame{}, false, 0, err
	}
	lasti := int(int32(instr))
	if l.codeCode >= 0 {
		diff := int64(instr - (codeAt + uint64(l.codeCode)))
		if diff%2 != 0 || diff < -2 || diff > 2*int64(c.units) {
			return Frame{}, false, 0, raced("frame %#x: instruction %#x outside its code %#x", addr, instr, codeAt)
		}
		lasti = int(diff / 2)
		if owner != ownedByGenerator && lasti < c.firstTraceable {
			return Frame{}, false, back, nil
		}
	}
	return Frame{Name: c.name, File: c.file, Line: c.line(l.minor, lasti)}, true, back, nil
}
