package pystack

import "fmt"

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
// (DropDepth), as are the stacks of a read past maxPassFrames frames
// (garbage that looks like thousands of deep threads must not cost the
// reader seconds).
const MaxDepth = 2048

// maxPassFrames is the most frames one read of every thread walks.
const maxPassFrames = 1 << 15

// stack reads the frame chain from frame (the thread's current frame),
// innermost first, into the pass's frame arena. Frames that have not
// started yet and C shim frames are left out, as the interpreter's own
// f_back leaves them out.
func (p *Process) stack(frame uint64) ([]Frame, error) {
	p.chain.reset()
	start := len(p.arena)
	for frame != 0 {
		if p.chain.len() == MaxDepth || p.budget == 0 {
			p.arena = p.arena[:start]
			return nil, &dropError{DropDepth, fmt.Errorf("more than %d frames, or past the read's %d", MaxDepth, maxPassFrames)}
		}
		p.budget--
		if !p.chain.add(frame) {
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
