package pystack

// code is what the reader keeps of one code object: its description and
// the fields that tell it from another code object later at the same
// address.
type code struct {
	stamp          codeStamp
	name, file     string
	firstLine      int
	firstTraceable int // index of the first traceable instruction; -1 before 3.11
	units          int // length in code units; -1 before 3.11
	table          []byte
	gen            uint32 // the cache generation it was last checked in
	memo           [8]lineMemo
	next           int // memo slot to fill next
}

// codeStamp is the identity of a code object: the addresses of its name,
// qualified name, file name and line table, and its first line. Names are
// immutable and kept alive by the code object, so a code object that
// replaced a freed one at the same address differs in some of these.
type codeStamp [5]uint64

// lineMemo is one instruction's line, remembered.
type lineMemo struct{ lasti, line int }

// maxCodes bounds the code cache; it is emptied when it grows past.
const maxCodes = 8192

// code is the code object at addr, from the cache when it was checked in
// this generation, else read: its type must be PyCode_Type (else the frame
// raced), and a cached description is kept when the stamp still matches.
func (p *Process) code(addr uint64) (*code, error) {
	c, ok := p.codes[addr]
	if ok && c.gen == p.gen {
		return c, nil
	}
	l := &p.lay
	hdr, err := p.read(addr, l.codeHeader())
	if err != nil {
		return nil, err
	}
	if typ := le64(hdr, l.obType); typ != p.types.code {
		return nil, raced("code at %#x: type %#x is not code", addr, typ)
	}
	stamp := codeStamp{le64(hdr, l.codeName), le64(hdr, l.codeQualname), le64(hdr, l.codeFilename),
		le64(hdr, l.codeLineTable), uint64(le32(hdr, l.codeFirstLine))}
	if ok && c.stamp == stamp {
		c.gen = p.gen
		return c, nil
	}
	c = &code{stamp: stamp, gen: p.gen, firstLine: int(int32(le32(hdr, l.codeFirstLine))),
		firstTraceable: -1, units: -1}
	if l.codeUnits >= 0 {
		c.units = int(int64(le64(hdr, l.codeUnits)))
		c.firstTraceable = int(int32(le32(hdr, l.codeFirstTraceable)))
	}
	if err := p.describe(c); err != nil {
		return nil, err
	}
	if len(p.codes) >= maxCodes {
		clear(p.codes)
	}
	p.codes[addr] = c
	return c, nil
}

// describe reads c's names and line table from the addresses in its stamp.
func (p *Process) describe(c *code) error {
	nameAt := c.stamp[0]
	if p.lay.codeQualname >= 0 {
		nameAt = c.stamp[1]
	}
	var err error
	if c.name, err = p.str(nameAt); err != nil {
		return err
	}
	if c.file, err = p.str(c.stamp[2]); err != nil {
		return err
	}
	c.table, err = p.bytesObj(c.stamp[3])
	return err
}

// line is the line of instruction lasti (code units; 3.10: f_lasti).
func (c *code) line(minor, lasti int) int {
	for _, m := range c.memo {
		if m.lasti == lasti && m.line != 0 {
			return m.line
		}
	}
	var line int
	if minor == 10 {
		line = line310(c.table, c.firstLine, 2*lasti)
	} else {
		line = line311(c.table, c.firstLine, lasti)
	}
	c.memo[c.next] = lineMemo{lasti, line}
	c.next = (c.next + 1) % len(c.memo)
	return line
}
