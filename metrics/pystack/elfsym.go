package pystack

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
)

// symbols are the addresses, as linked, of what the reader needs from the
// file that holds the runtime.
type symbols struct {
	runtime, version, code, str, bytes uint64
}

// field is where s keeps the symbol name; nil for a symbol it does not need.
func (s *symbols) field(name string) *uint64 {
	switch name {
	case "_PyRuntime":
		return &s.runtime
	case "Py_Version":
		return &s.version
	case "PyCode_Type":
		return &s.code
	case "PyUnicode_Type":
		return &s.str
	case "PyBytes_Type":
		return &s.bytes
	}
	return nil
}

// errNoRuntime is a file without CPython's _PyRuntime.
var errNoRuntime = errors.New("no _PyRuntime symbol")

// elfFile is an opened candidate file: its symbols and load segments.
type elfFile struct {
	syms  symbols
	progs []*elf.Prog
}

// openELF reads the symbols of the file at path (the dynamic symbols,
// then the full table where the file has one).
func openELF(path string) (*elfFile, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := &elfFile{progs: f.Progs}
	for _, table := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, err := table()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if at := out.syms.field(s.Name); at != nil && *at == 0 {
				*at = s.Value
			}
		}
		if out.syms.runtime != 0 && out.syms.code != 0 {
			break
		}
	}
	if out.syms.runtime == 0 {
		return nil, errNoRuntime
	}
	if out.syms.code == 0 || out.syms.str == 0 || out.syms.bytes == 0 {
		return nil, fmt.Errorf("%s: no PyCode_Type, PyUnicode_Type or PyBytes_Type symbol", path)
	}
	return out, nil
}

// bias is where the file at path is loaded in the process, less the
// addresses it was linked at: the start of a mapping of the file less the
// (page-aligned) address of the load segment at that mapping's offset.
func (e *elfFile) bias(maps []mapping, path string) (uint64, error) {
	page := uint64(os.Getpagesize())
	for _, m := range maps {
		if m.path != path {
			continue
		}
		for _, prog := range e.progs {
			if prog.Type == elf.PT_LOAD && prog.Off&^(page-1) == m.offset {
				return m.start - prog.Vaddr&^(page-1), nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no mapping of a load segment", path)
}
