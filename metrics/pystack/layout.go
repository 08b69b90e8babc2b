package pystack

import "fmt"

// layout is where one CPython minor version keeps what the reader reads:
// byte offsets into its structures, and the sizes read at once. -1 marks
// a field the version does not have. The off tags name the lines of
// testdata/offsets.c, which prints the same values from the version's
// own headers (TestLayoutMatchesHeaders).
type layout struct {
	minor int // 10 to 13: 3.minor

	// _PyRuntime: the first interpreter; the GIL itself on 3.10 and 3.11.
	interpHead       int `off:"runtime.interp_head"`
	runtimeGILLocked int `off:"runtime.gil_locked"`
	runtimeGILHolder int `off:"runtime.gil_holder"`

	// PyInterpreterState; 3.12 on: a pointer to its GIL's state.
	interpNext    int `off:"interp.next"`
	interpThreads int `off:"interp.threads_head"`
	interpGIL     int `off:"interp.gil"`

	// struct _gil_runtime_state, behind interpGIL (3.12 on).
	gilLocked int `off:"gil.locked"`
	gilHolder int `off:"gil.holder"`

	// PyThreadState. threadFrame is the current frame (3.10: a
	// PyFrameObject; 3.13: an _PyInterpreterFrame) or, on 3.11 and 3.12,
	// the _PyCFrame whose cframeCurrent is the current frame.
	threadSize     int `off:"thread.size"`
	threadNext     int `off:"thread.next"`
	threadID       int `off:"thread.thread_id"`
	threadNativeID int `off:"thread.native_thread_id"`
	threadFrame    int `off:"thread.frame"`
	cframeCurrent  int `off:"cframe.current_frame"`

	// A frame: PyFrameObject on 3.10 (frameInstr: f_lasti, an int in code
	// units), _PyInterpreterFrame from 3.11 (frameInstr: a pointer into
	// the code's instructions; frameCode: f_code, 3.13's f_executable).
	frameSize  int `off:"frame.size"`
	frameCode  int `off:"frame.code"`
	frameBack  int `off:"frame.back"`
	frameInstr int `off:"frame.instr"`
	frameOwner int `off:"frame.owner"`

	// Every object's ob_type, checked against the type the reader expects.
	obType int `off:"object.type"`

	// PyCodeObject. codeCode is where its instructions start (3.11 on),
	// codeUnits its length in code units (ob_size).
	codeFilename       int `off:"code.filename"`
	codeName           int `off:"code.name"`
	codeQualname       int `off:"code.qualname"`
	codeFirstLine      int `off:"code.first_line"`
	codeLineTable      int `off:"code.line_table"`
	codeFirstTraceable int `off:"code.first_traceable"`
	codeCode           int `off:"code.code"`
	codeUnits          int `off:"code.units"`

	// str: PyASCIIObject and PyCompactUnicodeObject.
	unicodeLength      int `off:"unicode.length"`
	unicodeState       int `off:"unicode.state"`
	unicodeASCIISize   int `off:"unicode.ascii_size"`
	unicodeCompactSize int `off:"unicode.compact_size"`

	// bytes: PyBytesObject.
	bytesSize int `off:"bytes.size"`
	bytesData int `off:"bytes.data"`
}

// Frame owners (_PyInterpreterFrame.owner, 3.11 on).
const (
	ownedByThread    = 0
	ownedByGenerator = 1
	ownedByCStack    = 3 // 3.12 on: a shim frame of a call from C
)

// codeHeader is how many bytes of a code object the reader reads: up to
// the last field it needs.
func (l *layout) codeHeader() int {
	n := 0
	for _, off := range []int{l.obType, l.codeFilename, l.codeName, l.codeQualname, l.codeLineTable, l.codeUnits} {
		n = max(n, off+8)
	}
	for _, off := range []int{l.codeFirstLine, l.codeFirstTraceable} {
		n = max(n, off+4)
	}
	return n
}

// check reports an offset that lies outside the struct the reader reads
// it from, or a size past any struct's: a layout the runtime's debug
// offsets changed must still be one the reader can use.
func (l *layout) check() error {
	const most = 1 << 16
	within := func(size int, offs ...int) bool {
		for _, off := range offs {
			if off >= size {
				return false
			}
		}
		return size > 0 && size <= most
	}
	switch {
	case !within(l.threadSize, l.threadNext, l.threadID, l.threadNativeID, l.threadFrame):
		return fmt.Errorf("thread state offsets past its size %d", l.threadSize)
	case !within(l.frameSize, l.frameCode, l.frameBack, l.frameInstr, l.frameOwner):
		return fmt.Errorf("frame offsets past its size %d", l.frameSize)
	case !within(l.unicodeASCIISize, l.obType, l.unicodeLength, l.unicodeState):
		return fmt.Errorf("str offsets past its size %d", l.unicodeASCIISize)
	case !within(l.bytesData, l.obType, l.bytesSize):
		return fmt.Errorf("bytes offsets past its size %d", l.bytesData)
	case l.codeHeader() > most, l.interpHead > most, l.interpThreads > most, l.interpNext > most, l.interpGIL > most:
		return fmt.Errorf("offsets past %d bytes", most)
	}
	return nil
}
