package pystack

import (
	"encoding/binary"
	"fmt"
)

// An image is a CPython runtime laid out in bytes by a layout, as it would
// be in a process: the runtime, interpreter, thread states, frames, code
// objects, strs and bytes, for the walker's tests and fuzzing.
const (
	imageBase  = 0x7f0000000000 // the image's first address
	imgRuntime = 0x0            // _PyRuntime's offset in the image
	imgCode    = 0x3d0          // PyCode_Type's
	imgStr     = 0x3e0          // PyUnicode_Type's
	imgBytes   = 0x3f0          // PyBytes_Type's
	imgHeap    = 0x400          // where objects start
)

// imageTypes are an image's type addresses.
var imageTypes = types{imageBase + imgCode, imageBase + imgStr, imageBase + imgBytes}

// imageMem is an image as memory: mapped from imageBase to the end of its
// last page (zeros past its bytes), nothing else.
type imageMem []byte

func (m imageMem) ReadAt(p []byte, addr uint64) error {
	mapped := uint64(len(m)+pageSize-1) &^ (pageSize - 1)
	if addr < imageBase || addr-imageBase >= mapped || uint64(len(p)) > mapped-(addr-imageBase) {
		return &FaultError{addr, len(p), errTruncated}
	}
	clear(p)
	if off := addr - imageBase; off < uint64(len(m)) {
		copy(p, m[off:])
	}
	return nil
}

// image builds an image.
type image struct {
	lay  layout
	data []byte
}

func newImage(minor int) *image {
	return &image{lay: layouts[minor], data: make([]byte, imgHeap)}
}

// process is a reader of the image.
func (im *image) process() *Process {
	return newProcess(imageMem(im.data), im.lay, imageBase+imgRuntime, imageTypes)
}

// alloc is the address of n new bytes, 16-aligned.
func (im *image) alloc(n int) uint64 {
	at := (len(im.data) + 15) &^ 15
	im.data = append(im.data, make([]byte, at+n-len(im.data))...)
	return imageBase + uint64(at)
}

func (im *image) at(addr uint64, off int) []byte { return im.data[addr-imageBase+uint64(off):] }

func (im *image) put64(addr uint64, off int, v uint64) {
	if off >= 0 {
		binary.LittleEndian.PutUint64(im.at(addr, off), v)
	}
}

func (im *image) put32(addr uint64, off int, v uint32) {
	if off >= 0 {
		binary.LittleEndian.PutUint32(im.at(addr, off), v)
	}
}

// str is a compact ASCII str.
func (im *image) str(s string) uint64 {
	l := &im.lay
	a := im.alloc(l.unicodeASCIISize + len(s) + 1)
	im.put64(a, l.obType, imageTypes.str)
	im.put64(a, l.unicodeLength, uint64(len(s)))
	im.put32(a, l.unicodeState, 1<<2|1<<5|1<<6) // kind 1, compact, ascii
	copy(im.at(a, l.unicodeASCIISize), s)
	return a
}

// bytesObj is a bytes object.
func (im *image) bytesObj(b []byte) uint64 {
	l := &im.lay
	a := im.alloc(l.bytesData + len(b) + 1)
	im.put64(a, l.obType, imageTypes.bytes)
	im.put64(a, l.bytesSize, uint64(len(b)))
	copy(im.at(a, l.bytesData), b)
	return a
}

// flatTable is a line table that puts each of units instructions on the
// first line.
func (im *image) flatTable(units int) []byte {
	var t []byte
	if im.lay.minor == 10 {
		for n := 2 * units; n > 0; n -= 254 {
			t = append(t, byte(min(n, 254)), 0)
		}
		return t
	}
	for n := units; n > 0; n -= 8 {
		t = append(t, 0x80|locNoColumns<<3|byte(min(n, 8)-1), 0)
	}
	return t
}

// code is a code object of units instructions, all at line.
func (im *image) code(name, file string, line, units int) uint64 {
	l := &im.lay
	size := l.codeHeader()
	if l.codeCode >= 0 {
		size = max(size, l.codeCode+2*units)
	}
	nameAt, fileAt, table := im.str(name), im.str(file), im.bytesObj(im.flatTable(units))
	a := im.alloc(size)
	im.put64(a, l.obType, imageTypes.code)
	im.put64(a, l.codeName, nameAt)
	im.put64(a, l.codeQualname, nameAt)
	im.put64(a, l.codeFilename, fileAt)
	im.put64(a, l.codeLineTable, table)
	im.put32(a, l.codeFirstLine, uint32(line))
	im.put64(a, l.codeUnits, uint64(units))
	im.put32(a, l.codeFirstTraceable, 0)
	return a
}

// frame is a frame of code at instruction lasti, called by back.
func (im *image) frame(code uint64, lasti int, back uint64) uint64 {
	l := &im.lay
	a := im.alloc(l.frameSize)
	im.put64(a, l.frameBack, back)
	im.put64(a, l.frameCode, code)
	if l.minor == 10 {
		im.put32(a, l.frameInstr, uint32(lasti))
	} else {
		im.put64(a, l.frameInstr, code+uint64(l.codeCode)+uint64(2*lasti))
	}
	return a
}

// thread is a thread state whose current frame is frame, next in the list
// before next.
func (im *image) thread(id uint64, native int, frame, next uint64) uint64 {
	l := &im.lay
	a := im.alloc(l.threadSize)
	im.put64(a, l.threadNext, next)
	im.put64(a, l.threadID, id)
	im.put64(a, l.threadNativeID, uint64(native))
	if l.cframeCurrent >= 0 {
		cf := im.alloc(l.cframeCurrent + 8)
		im.put64(cf, l.cframeCurrent, frame)
		frame = cf
	}
	im.put64(a, l.threadFrame, frame)
	return a
}

// interp makes the runtime's one interpreter, its threads from head, the
// GIL held by holder (0: by none).
func (im *image) interp(head, holder uint64) {
	l := &im.lay
	a := im.alloc(max(l.interpNext, l.interpThreads, l.interpGIL) + 8)
	rt := uint64(imageBase + imgRuntime)
	im.put64(rt, l.interpHead, a)
	im.put64(a, l.interpThreads, head)
	locked := uint32(0)
	if holder != 0 {
		locked = 1
	}
	if l.interpGIL < 0 {
		im.put32(rt, l.runtimeGILLocked, locked)
		im.put64(rt, l.runtimeGILHolder, holder)
		return
	}
	gil := im.alloc(32)
	im.put64(a, l.interpGIL, gil)
	im.put32(gil, l.gilLocked, locked)
	im.put64(gil, l.gilHolder, holder)
}

// scene is an image of two threads: the first (the main thread, tid 100)
// in a chain of depth frames f0 (innermost, line 10) to f{depth-1} (line
// 10+depth-1), the second (tid 101) in one frame, holding the GIL. The
// frames of the first thread, innermost first, are returned too.
func scene(minor, depth int) (*image, []uint64, []Frame) {
	im := newImage(minor)
	var frames []uint64
	var want []Frame
	back := uint64(0)
	for i := depth - 1; i >= 0; i-- {
		name := fmt.Sprintf("f%d", i)
		code := im.code(name, "scene.py", 10+i, 16)
		back = im.frame(code, 3, back)
		frames = append([]uint64{back}, frames...)
		want = append([]Frame{{Name: name, File: "scene.py", Line: 10 + i}}, want...)
	}
	spin := im.frame(im.code("spin", "scene.py", 99, 16), 5, 0)
	second := im.thread(0x2000, 101, spin, 0)
	first := im.thread(0x1000, 100, back, 0)
	im.put64(second, im.lay.threadNext, first) // newest first
	im.interp(second, second)
	return im, frames, want
}
