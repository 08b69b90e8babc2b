package pystack

import (
	"encoding/binary"
)

// Little-endian fields of a struct read whole; 0 outside the buffer (a
// layout never asks for one, and a wrong one must not panic).

func le64(b []byte, off int) uint64 {
	if off < 0 || off+8 > len(b) {
		return 0
	}
	return binary.LittleEndian.Uint64(b[off:])
}

func le32(b []byte, off int) uint32 {
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return binary.LittleEndian.Uint32(b[off:])
}

func byteAt(b []byte, off int) byte {
	if off < 0 || off >= len(b) {
		return 0
	}
	return b[off]
}

// ptr reads the pointer at addr.
func (p *Process) ptr(addr uint64) (uint64, error) {
	b := p.scratch(8)
	if err := p.cache.ReadAt(b, addr); err != nil {
		return 0, err
	}
	return le64(b, 0), nil
}

// struct reads n bytes at addr into the scratch buffer, valid until the
// next read.
func (p *Process) read(addr uint64, n int) ([]byte, error) {
	b := p.scratch(n)
	if err := p.cache.ReadAt(b, addr); err != nil {
		return nil, err
	}
	return b, nil
}

// scratch is the scratch buffer, n bytes long.
func (p *Process) scratch(n int) []byte {
	if cap(p.buf) < n {
		p.buf = make([]byte, n)
	}
	return p.buf[:n]
}
