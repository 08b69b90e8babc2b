package pystack

// Line numbers from a code object's line table, as CPython computes a
// frame's f_lineno. A line of 0 is unknown (no line for that
// instruction, or an offset past the table). Neither decoder reads past
// the table nor loops more than once over it, whatever its bytes.

// line310 is the line of byte offset addr in a CPython 3.10 co_linetable:
// pairs of (bytes of code, unsigned; line change, signed, -128: no line),
// the first range starting at offset 0 and line firstLine.
func line310(table []byte, firstLine, addr int) int {
	if addr < 0 {
		return max(firstLine, 0)
	}
	line, end := firstLine, 0
	for i := 0; i+1 < len(table); i += 2 {
		end += int(table[i])
		delta := int(int8(table[i+1]))
		cur := -1
		if delta != -128 {
			line += delta
			cur = line
		}
		if end > addr {
			return max(cur, 0)
		}
	}
	return 0
}

// Location-table entry codes (3.11 on): the top bit starts an entry, then
// four bits of code and three of length in code units, less one.
const (
	locNone      = 15 // no location
	locLong      = 14 // line change, end line, columns: varints
	locNoColumns = 13 // line change only
	locOneLine0  = 10 // 10, 11, 12: the line changes by code-10
)

// line311 is the line of instruction lasti (in code units) in a CPython
// 3.11 to 3.13 location table (co_linetable), starting at line firstLine.
func line311(table []byte, firstLine, lasti int) int {
	if lasti < 0 {
		return max(firstLine, 0)
	}
	line, end := firstLine, 0
	for i := 0; i < len(table); {
		head := table[i]
		code := int(head>>3) & 15
		end += int(head&7) + 1
		switch {
		case code == locNoColumns || code == locLong:
			line += signedVarint(table, i+1)
		case code >= locOneLine0 && code <= locOneLine0+2:
			line += code - locOneLine0
		}
		if end > lasti {
			if head>>3 == 0x1f {
				return 0
			}
			return max(line, 0)
		}
		i++
		for i < len(table) && table[i]&0x80 == 0 {
			i++
		}
	}
	return 0
}

// signedVarint reads the location table's signed varint at i: six bits a
// byte, least significant first, 0x40 set on every byte but the last; the
// lowest bit of the value is the sign.
func signedVarint(table []byte, i int) int {
	var v uint32
	for shift := uint(0); i < len(table) && shift < 32; shift += 6 {
		b := table[i]
		v |= uint32(b&63) << shift
		if b&64 == 0 {
			break
		}
		i++
	}
	if v&1 != 0 {
		return -int(v >> 1)
	}
	return int(v >> 1)
}
