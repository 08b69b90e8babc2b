// Package pystack reads the Python stacks of a running CPython process
// (3.10 to 3.13) from outside it: the interpreter's thread states, their
// frame chains, the code objects' names, files and line tables, and which
// thread holds the GIL, read from the process's memory with
// process_vm_readv. The process is never stopped and runs nothing for the
// reader; a read that races the interpreter (a freed frame, a pointer that
// no longer leads to a code object, a cycle, a chain too deep) drops that
// thread's stack and counts it (Drops).
//
// It finds the runtime from the ELF symbols of the python executable or
// the libpython it loaded (maps.go, elfsym.go), tells the version
// (version.go), takes the offsets of that version's structures from a
// table (layouts.go; 3.13's own _Py_DebugOffsets checked against it,
// debugoffsets.go), and reads through a small Memory interface
// (memory.go) so that tests and fuzzing can feed it any bytes.
//
// pipetop stacks PID prints what it reads (Dump). The reader is not a
// sampler and not the stack sampler: the stack sampler is the Python
// instrumentation's thread, and a sampler reads host state.
package pystack
