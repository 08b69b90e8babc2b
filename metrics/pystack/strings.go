package pystack

import (
	"strings"
	"unicode/utf8"
)

// Caps on what one object may make the reader read.
const (
	maxString    = 4096    // characters of a name or file name
	maxLineTable = 1 << 20 // bytes of a line table
)

// str reads the str object at addr: a compact one (ASCII, or UCS1/2/4),
// as every name and file name of a code object is. Anything else — not a
// str, a legacy string, a length past maxString — raced.
func (p *Process) str(addr uint64) (string, error) {
	l := &p.lay
	hdr, err := p.read(addr, l.unicodeASCIISize)
	if err != nil {
		return "", err
	}
	if typ := le64(hdr, l.obType); typ != p.types.str {
		return "", raced("str at %#x: type %#x is not str", addr, typ)
	}
	n := int64(le64(hdr, l.unicodeLength))
	state := le32(hdr, l.unicodeState)
	kind, compact, ascii := int(state>>2&7), state>>5&1 == 1, state>>6&1 == 1
	switch {
	case !compact:
		return "", raced("str at %#x: not compact", addr)
	case n < 0 || n > maxString:
		return "", raced("str at %#x: length %d", addr, n)
	case kind != 1 && kind != 2 && kind != 4, ascii && kind != 1:
		return "", raced("str at %#x: kind %d", addr, kind)
	}
	data := addr + uint64(l.unicodeCompactSize)
	if ascii {
		data = addr + uint64(l.unicodeASCIISize)
	}
	b, err := p.read(data, int(n)*kind)
	if err != nil {
		return "", err
	}
	return decodeStr(b, kind, ascii), nil
}

// decodeStr is the UTF-8 of a str's data of kind 1, 2 or 4 bytes a
// character (1 and ascii: already UTF-8).
func decodeStr(b []byte, kind int, ascii bool) string {
	if ascii {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i+kind <= len(b); i += kind {
		var r rune
		switch kind {
		case 1:
			r = rune(b[i])
		case 2:
			r = rune(le16(b[i:]))
		default:
			r = rune(le32(b, i))
		}
		if !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// bytesObj reads the bytes object at addr (at most maxLineTable bytes):
// a code object's line table.
func (p *Process) bytesObj(addr uint64) ([]byte, error) {
	l := &p.lay
	hdr, err := p.read(addr, l.bytesData)
	if err != nil {
		return nil, err
	}
	if typ := le64(hdr, l.obType); typ != p.types.bytes {
		return nil, raced("bytes at %#x: type %#x is not bytes", addr, typ)
	}
	n := int64(le64(hdr, l.bytesSize))
	if n < 0 || n > maxLineTable {
		return nil, raced("bytes at %#x: length %d", addr, n)
	}
	if n > 0 { // its last byte first: garbage fails here without a large buffer
		if _, err := p.read(addr+uint64(l.bytesData)+uint64(n-1), 1); err != nil {
			return nil, err
		}
	}
	b := make([]byte, n)
	if err := p.cache.ReadAt(b, addr+uint64(l.bytesData)); err != nil {
		return nil, err
	}
	return b, nil
}
