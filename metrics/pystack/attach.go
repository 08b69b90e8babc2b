package pystack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Process is a CPython process whose stacks can be read. It is not safe
// for concurrent use.
type Process struct {
	pid     int
	version Version
	file    string // the executable or libpython that holds the runtime
	lay     layout
	runtime uint64 // address of _PyRuntime
	types   types
	mem     Memory
	cache   *pageCache
	buf     []byte

	codes  map[uint64]*code
	gen    uint32 // the cache generation: one a second (generation)
	genAt  time.Time
	chain  visited // the frame chain being walked
	list   visited // the thread list being walked
	budget int     // frames this pass may still walk
	arena  []Frame // the frames of this pass's stacks
	sizes  [2]int  // frames and threads of the last pass
	tids   tidFinder
	names  map[int]threadName
	drops  Drops
}

// types are the addresses of the type objects the reader checks objects
// against.
type types struct{ code, str, bytes uint64 }

// ErrNotPython is a process that runs no CPython.
var ErrNotPython = errors.New("not a Python process")

// Attach finds the CPython runtime of process pid and checks that pipetop
// may read it. Errors: ErrNotPython; *UnsupportedError naming the
// version; *PermissionError with the reason (another user's process
// without root, Yama's ptrace_scope, no CAP_SYS_PTRACE).
func Attach(pid int) (*Process, error) {
	if err := checkOwner(pid); err != nil {
		return nil, err
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, procError(pid, "its executable", err)
	}
	maps, err := readMaps(pid)
	if err != nil {
		return nil, procError(pid, "its memory map", err)
	}
	file, ef, err := findRuntime(pid, maps, exe)
	if err != nil {
		return nil, err
	}
	bias, err := ef.bias(maps, file)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	mem := newProcessMemory(pid)
	if err := probe(pid, mem, ef.syms.runtime+bias); err != nil {
		return nil, err
	}
	p, err := attachRuntime(pid, mem, file, ef.syms, bias)
	if err != nil {
		mem.Close()
		return nil, err
	}
	return p, nil
}

// attachRuntime makes the Process of the runtime in file (its symbols,
// loaded at bias): its version, and its layout.
func attachRuntime(pid int, mem Memory, file string, syms symbols, bias uint64) (*Process, error) {
	v, err := readVersion(mem, file, syms, bias)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	if !supported(v) {
		return nil, &UnsupportedError{PID: pid, Version: v}
	}
	lay := layouts[v.Minor]
	runtime := syms.runtime + bias
	if v.Minor >= 13 {
		d, err := readDebugOffsets(mem, runtime)
		if err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
		if d.FreeThreaded != 0 {
			return nil, &UnsupportedError{PID: pid, Version: v, Why: "a free-threaded build"}
		}
		d.apply(&lay)
		if err := lay.check(); err != nil {
			return nil, fmt.Errorf("pid %d: CPython %v's debug offsets: %w", pid, v, err)
		}
	}
	p := newProcess(mem, lay, runtime, types{syms.code + bias, syms.str + bias, syms.bytes + bias})
	p.pid, p.version, p.file = pid, v, file
	return p, nil
}

// newProcess is a reader of the runtime at runtime in mem with layout lay.
func newProcess(mem Memory, lay layout, runtime uint64, t types) *Process {
	return &Process{
		mem: mem, lay: lay, runtime: runtime, types: t, cache: newPageCache(mem),
		codes: make(map[uint64]*code),
		names: make(map[int]threadName), tids: tidFinder{off: -1},
	}
}

// findRuntime is the first candidate file (each libpython the process
// mapped, then its executable) whose symbols hold _PyRuntime.
func findRuntime(pid int, maps []mapping, exe string) (string, *elfFile, error) {
	var named []Version
	for _, path := range candidates(maps, exe) {
		ef, err := openELF(inRoot(pid, path))
		if err == nil {
			return path, ef, nil
		}
		if v, ok := nameVersion(path); ok {
			named = append(named, v)
		}
		if !errors.Is(err, errNoRuntime) && !isNotELF(err) {
			return "", nil, fmt.Errorf("pid %d: %s: %w", pid, path, err)
		}
	}
	switch {
	case len(named) > 0 && supported(named[0]):
		return "", nil, fmt.Errorf("pid %d (%s): %w yet: no libpython it mapped nor %s holds _PyRuntime (still starting?)",
			pid, filepath.Base(exe), ErrNotPython, exe)
	case len(named) > 0:
		return "", nil, &UnsupportedError{PID: pid, Version: named[0], Why: "without the _PyRuntime of 3.7 and later"}
	}
	return "", nil, fmt.Errorf("pid %d (%s): %w: neither %s nor a libpython it loaded holds CPython's _PyRuntime",
		pid, filepath.Base(exe), ErrNotPython, exe)
}

// isNotELF reports whether err is a file that is not ELF (a script
// interpreter's wrapper, say), or missing.
func isNotELF(err error) bool {
	return errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "bad magic number")
}

// inRoot is path as pid sees it (its root may be a container's), where
// that can be opened; else path itself.
func inRoot(pid int, path string) string {
	p := fmt.Sprintf("/proc/%d/root%s", pid, path)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return path
}

// readVersion is the runtime's version: Py_Version (3.11 on), else the
// file's name (libpython3.10.so, python3.10).
func readVersion(mem Memory, file string, syms symbols, bias uint64) (Version, error) {
	if syms.version != 0 {
		var b [4]byte
		if err := mem.ReadAt(b[:], syms.version+bias); err != nil {
			return Version{}, fmt.Errorf("read Py_Version: %w", err)
		}
		return versionFromHex(le32(b[:], 0)), nil
	}
	if v, ok := nameVersion(file); ok {
		return v, nil
	}
	return Version{}, fmt.Errorf("%s: neither Py_Version nor a versioned name (python3.X) tells its CPython version", file)
}

// probe reads the runtime's first bytes: a refusal here is a permission
// the kernel withholds, explained.
func probe(pid int, mem Memory, runtime uint64) error {
	var b [8]byte
	err := mem.ReadAt(b[:], runtime)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return refused(pid, err)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("pid %d: %w", pid, ErrExited)
	}
	return fmt.Errorf("pid %d: read _PyRuntime: %w", pid, err)
}

// procError is an error reading what of pid's /proc: a permission error
// explained, else the error.
func procError(pid int, what string, err error) error {
	switch {
	case errors.Is(err, os.ErrPermission):
		return refused(pid, err)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("pid %d: no such process", pid)
	}
	return fmt.Errorf("pid %d: read %s: %w", pid, what, err)
}

// PID is the process's id.
func (p *Process) PID() int { return p.pid }

// Version is the process's CPython version.
func (p *Process) Version() Version { return p.version }

// File is the executable or libpython that holds its runtime.
func (p *Process) File() string { return p.file }

// Drops counts the stacks dropped since Attach.
func (p *Process) Drops() Drops { return p.drops }

// Close releases what the reader holds open.
func (p *Process) Close() error {
	if pm, ok := p.mem.(*processMemory); ok {
		return pm.Close()
	}
	return nil
}

// ReadAt reads len(b) bytes of the process's memory at addr as they are
// now (a word the process publishes for its readers, say); the error of a
// process that has exited wraps ErrExited.
func (p *Process) ReadAt(b []byte, addr uint64) error {
	err := p.mem.ReadAt(b, addr)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pid %d: %w", p.pid, ErrExited)
	}
	return err
}

// Child is a reader of process pid, forked from p's process (a
// DataLoader worker): the same runtime at the same addresses, so nothing
// is looked up again. The caller checks that pid is such a child (that its
// memory holds what the parent's did where it looks); a child that ran
// another program reads as garbage, dropped and counted like any race.
func (p *Process) Child(pid int) (*Process, error) {
	mem := newProcessMemory(pid)
	if err := probe(pid, mem, p.runtime); err != nil {
		mem.Close()
		return nil, err
	}
	c := newProcess(mem, p.lay, p.runtime, p.types)
	c.pid, c.version, c.file = pid, p.version, p.file
	return c, nil
}

// ReadCached is ReadAt served from the pages the last Threads read, as
// they were then; a page it did not read is read now, and joins the one
// vectored read that starts the next Threads. A word read after every
// Threads (a stage word) thus costs no system call of its own.
func (p *Process) ReadCached(b []byte, addr uint64) error {
	err := p.cache.ReadAt(b, addr)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pid %d: %w", p.pid, ErrExited)
	}
	return err
}
