package zarr

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Kind is the numeric family of a dtype.
type Kind byte

// The supported dtype kinds, named after numpy's type codes.
const (
	Bool  Kind = 'b'
	Int   Kind = 'i'
	Uint  Kind = 'u'
	Float Kind = 'f'
)

// DType is a parsed numpy type string such as "<f4" or "|u1".
type DType struct {
	Kind      Kind
	Size      int  // bytes per element
	BigEndian bool // stored byte order; always false for 1-byte types
}

// ParseDType parses a numpy type string ("<u2", ">f8", "|i1", "|b1").
func ParseDType(s string) (DType, error) {
	if len(s) < 3 {
		return DType{}, fmt.Errorf("dtype %q: too short", s)
	}
	var d DType
	switch s[0] {
	case '<', '|', '=':
	case '>':
		d.BigEndian = true
	default:
		return DType{}, fmt.Errorf("dtype %q: unknown byte order %q", s, s[0])
	}
	d.Kind = Kind(s[1])
	n := 0
	for _, c := range s[2:] {
		if c < '0' || c > '9' || n > 64 {
			return DType{}, fmt.Errorf("dtype %q: bad size", s)
		}
		n = n*10 + int(c-'0')
	}
	d.Size = n
	ok := false
	switch d.Kind {
	case Bool:
		ok = n == 1
	case Int, Uint:
		ok = n == 1 || n == 2 || n == 4 || n == 8
	case Float:
		ok = n == 2 || n == 4 || n == 8
	}
	if !ok {
		return DType{}, fmt.Errorf("dtype %q: unsupported (want integer, float or bool)", s)
	}
	if n == 1 {
		d.BigEndian = false
	}
	return d, nil
}

// MustDType is ParseDType for constants; it panics on a bad string.
func MustDType(s string) DType {
	d, err := ParseDType(s)
	if err != nil {
		panic(err)
	}
	return d
}

// String returns the numpy type string.
func (d DType) String() string {
	o := byte('<')
	if d.Size == 1 {
		o = '|'
	} else if d.BigEndian {
		o = '>'
	}
	return fmt.Sprintf("%c%c%d", o, d.Kind, d.Size)
}

// ByteOrder returns the stored byte order.
func (d DType) ByteOrder() binary.ByteOrder {
	if d.BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// nativeBig reports whether this machine is big-endian.
var nativeBig = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// ToNative converts buf (whole elements of d) from stored to native byte
// order in place. It is a no-op when the orders already agree.
func (d DType) ToNative(buf []byte) {
	if d.Size == 1 || d.BigEndian == nativeBig {
		return
	}
	swapBytes(buf, d.Size)
}

func swapBytes(buf []byte, size int) {
	switch size {
	case 2:
		for i := 0; i+1 < len(buf); i += 2 {
			buf[i], buf[i+1] = buf[i+1], buf[i]
		}
	case 4:
		for i := 0; i+3 < len(buf); i += 4 {
			v := binary.LittleEndian.Uint32(buf[i:])
			binary.LittleEndian.PutUint32(buf[i:], bits.ReverseBytes32(v))
		}
	case 8:
		for i := 0; i+7 < len(buf); i += 8 {
			v := binary.LittleEndian.Uint64(buf[i:])
			binary.LittleEndian.PutUint64(buf[i:], bits.ReverseBytes64(v))
		}
	}
}

// encodeValue writes v as one element of d into out (len d.Size).
func (d DType) encodeValue(out []byte, v float64) error {
	o := d.ByteOrder()
	switch d.Kind {
	case Bool:
		out[0] = 0
		if v != 0 {
			out[0] = 1
		}
	case Int, Uint:
		if v != math.Trunc(v) || math.IsNaN(v) {
			return fmt.Errorf("fill value %v is not an integer for dtype %s", v, d)
		}
		if d.Kind == Uint && v < 0 {
			return fmt.Errorf("fill value %v is negative for dtype %s", v, d)
		}
		u := uint64(int64(v))
		if d.Kind == Uint {
			u = uint64(v)
		}
		putUint(out, o, d.Size, u)
	case Float:
		switch d.Size {
		case 2:
			o.PutUint16(out, float16Bits(float32(v)))
		case 4:
			o.PutUint32(out, math.Float32bits(float32(v)))
		case 8:
			o.PutUint64(out, math.Float64bits(v))
		}
	}
	return nil
}

func putUint(out []byte, o binary.ByteOrder, size int, u uint64) {
	switch size {
	case 1:
		out[0] = byte(u)
	case 2:
		o.PutUint16(out, uint16(u))
	case 4:
		o.PutUint32(out, uint32(u))
	case 8:
		o.PutUint64(out, u)
	}
}

// float16Bits converts f to IEEE 754 half precision, rounding to nearest even.
func float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// v3Names maps Zarr v3 data_type names to kind and size. The byte order of
// a v3 array is not part of its data type: the bytes codec sets it.
var v3Names = map[string]DType{
	"bool": {Bool, 1, false}, "int8": {Int, 1, false}, "int16": {Int, 2, false},
	"int32": {Int, 4, false}, "int64": {Int, 8, false}, "uint8": {Uint, 1, false},
	"uint16": {Uint, 2, false}, "uint32": {Uint, 4, false}, "uint64": {Uint, 8, false},
	"float16": {Float, 2, false}, "float32": {Float, 4, false}, "float64": {Float, 8, false},
}

// parseDataTypeV3 parses a Zarr v3 data_type name ("uint8", "float32").
func parseDataTypeV3(name string) (DType, error) {
	d, ok := v3Names[name]
	if !ok {
		return DType{}, fmt.Errorf("data_type %q: unsupported (want bool, int8..int64, uint8..uint64 or float16..float64)", name)
	}
	return d, nil
}

// V3Name is the Zarr v3 data_type name of d ("uint8", "float32").
func (d DType) V3Name() string {
	prefix := map[Kind]string{Bool: "bool", Int: "int", Uint: "uint", Float: "float"}[d.Kind]
	if d.Kind == Bool {
		return prefix
	}
	return fmt.Sprintf("%s%d", prefix, 8*d.Size)
}

// value decodes one element (in d's byte order) as a Go value: bool,
// int64, uint64 or float64.
func (d DType) value(b []byte) any {
	o := d.ByteOrder()
	var u uint64
	switch d.Size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(o.Uint16(b))
	case 4:
		u = uint64(o.Uint32(b))
	case 8:
		u = o.Uint64(b)
	}
	switch d.Kind {
	case Bool:
		return u != 0
	case Int:
		shift := 64 - 8*d.Size
		return int64(u<<shift) >> shift
	case Float:
		switch d.Size {
		case 2:
			return float16Value(uint16(u))
		case 4:
			return float64(math.Float32frombits(uint32(u)))
		}
		return math.Float64frombits(u)
	}
	return u
}

// float16Value converts IEEE 754 half precision bits to a float64.
func float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 0x1f:
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1+mant/1024, exp-15)
}
