package pystack

import (
	"encoding/binary"
	"fmt"
)

// debugOffsets is the start of 3.13's _Py_DebugOffsets, the first field
// of _PyRuntime: the offsets a debugger needs, published by the runtime
// itself (Include/internal/pycore_runtime.h). Only the groups up to the
// unicode object's are read; each group starts with its struct's size.
type debugOffsets struct {
	Cookie       [8]byte
	Version      uint64
	FreeThreaded uint64
	Runtime      struct{ Size, Finalizing, InterpretersHead uint64 }
	Interp       struct {
		Size, ID, Next, ThreadsHead, GC, ImportsModules, Sysdict, Builtins, CevalGIL uint64
		GILRuntimeState, GILEnabled, GILLocked, GILHolder                            uint64
	}
	Thread struct {
		Size, Prev, Next, Interp, CurrentFrame, ThreadID, NativeThreadID, DatastackChunk, Status uint64
	}
	Frame struct{ Size, Previous, Executable, InstrPtr, Localsplus, Owner uint64 }
	Code  struct {
		Size, Filename, Name, Qualname, Linetable, Firstlineno, Argcount, Localsplusnames, Localspluskinds, CodeAdaptive uint64
	}
	PyObject struct{ Size, ObType uint64 }
	Type     struct{ Size, Name, Repr, Flags uint64 }
	Tuple    struct{ Size, Item, ObSize uint64 }
	List     struct{ Size, Item, ObSize uint64 }
	Dict     struct{ Size, Keys, Values uint64 }
	Float    struct{ Size, Fval uint64 }
	Long     struct{ Size, Tag, Digit uint64 }
	Bytes    struct{ Size, ObSize, Sval uint64 }
	Unicode  struct{ Size, State, Length, ASCIIObjectSize uint64 }
}

// debugCookie starts a _Py_DebugOffsets.
const debugCookie = "xdebugpy"

// readDebugOffsets reads the _Py_DebugOffsets at the start of _PyRuntime.
func readDebugOffsets(mem Memory, runtime uint64) (*debugOffsets, error) {
	var d debugOffsets
	b := make([]byte, binary.Size(d))
	if err := mem.ReadAt(b, runtime); err != nil {
		return nil, fmt.Errorf("read _Py_DebugOffsets: %w", err)
	}
	if _, err := binary.Decode(b, binary.LittleEndian, &d); err != nil {
		return nil, fmt.Errorf("decode _Py_DebugOffsets: %w", err)
	}
	if string(d.Cookie[:]) != debugCookie {
		return nil, fmt.Errorf("_Py_DebugOffsets: cookie %q, not %q", d.Cookie[:], debugCookie)
	}
	return &d, nil
}

// apply overrides the fields of l the debug offsets cover with theirs and
// returns the names of those that differed from the table.
func (d *debugOffsets) apply(l *layout) []string {
	var differ []string
	set := func(name string, field *int, v uint64) {
		if *field != int(v) {
			differ = append(differ, fmt.Sprintf("%s: table %d, runtime %d", name, *field, v))
			*field = int(v)
		}
	}
	set("runtime.interp_head", &l.interpHead, d.Runtime.InterpretersHead)
	set("interp.next", &l.interpNext, d.Interp.Next)
	set("interp.threads_head", &l.interpThreads, d.Interp.ThreadsHead)
	set("interp.gil", &l.interpGIL, d.Interp.CevalGIL)
	set("gil.locked", &l.gilLocked, d.Interp.GILLocked-d.Interp.GILRuntimeState)
	set("gil.holder", &l.gilHolder, d.Interp.GILHolder-d.Interp.GILRuntimeState)
	set("thread.size", &l.threadSize, d.Thread.Size)
	set("thread.next", &l.threadNext, d.Thread.Next)
	set("thread.thread_id", &l.threadID, d.Thread.ThreadID)
	set("thread.native_thread_id", &l.threadNativeID, d.Thread.NativeThreadID)
	set("thread.frame", &l.threadFrame, d.Thread.CurrentFrame)
	set("frame.size", &l.frameSize, d.Frame.Localsplus)
	set("frame.code", &l.frameCode, d.Frame.Executable)
	set("frame.back", &l.frameBack, d.Frame.Previous)
	set("frame.instr", &l.frameInstr, d.Frame.InstrPtr)
	set("frame.owner", &l.frameOwner, d.Frame.Owner)
	set("object.type", &l.obType, d.PyObject.ObType)
	set("code.filename", &l.codeFilename, d.Code.Filename)
	set("code.name", &l.codeName, d.Code.Name)
	set("code.qualname", &l.codeQualname, d.Code.Qualname)
	set("code.first_line", &l.codeFirstLine, d.Code.Firstlineno)
	set("code.line_table", &l.codeLineTable, d.Code.Linetable)
	set("code.code", &l.codeCode, d.Code.CodeAdaptive)
	set("unicode.length", &l.unicodeLength, d.Unicode.Length)
	set("unicode.state", &l.unicodeState, d.Unicode.State)
	set("unicode.ascii_size", &l.unicodeASCIISize, d.Unicode.ASCIIObjectSize)
	set("bytes.size", &l.bytesSize, d.Bytes.ObSize)
	set("bytes.data", &l.bytesData, d.Bytes.Sval)
	return differ
}
