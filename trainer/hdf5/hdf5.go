// Package hdf5 reads HDF5 files through libhdf5: the datasets of a file,
// each one's shape, element type, chunking and filters, and rows of it.
// It is the only cgo binding to libhdf5 in pipetop; no libhdf5 type
// leaves it.
//
// libhdf5 decodes the standard filters itself (gzip, shuffle,
// fletcher32, szip, scale-offset, n-bit); this package registers an LZF
// decoder (h5py's filter 32000, which h5py carries in its own module, so
// a bare libhdf5 cannot read it). A dataset whose filter neither provides
// is reported by number, and reading it is an error naming the filter.
// Calls are serialised: Debian's libhdf5 is not built thread-safe.
package hdf5

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include "hdf5_glue.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// mu serialises every libhdf5 call.
var mu sync.Mutex

var initOnce sync.Once

// lock takes mu and pins the goroutine to its thread: a thread-safe
// libhdf5 keeps its error stack and its printing switch per thread, and a
// failed call's message is read by a later call.
func lock() {
	initOnce.Do(func() { C.pt_init() })
	mu.Lock()
	runtime.LockOSThread()
	C.pt_quiet()
}

func unlock() {
	runtime.UnlockOSThread()
	mu.Unlock()
}

// lastError is libhdf5's innermost error message for the call that just
// failed (under mu).
func lastError() string {
	var buf [512]C.char
	C.pt_last_error(&buf[0], C.size_t(len(buf)))
	if s := C.GoString(&buf[0]); s != "" {
		return s
	}
	return "libhdf5 reported an error without a message"
}

// File is an open HDF5 file.
type File struct {
	path string
	id   C.hid_t
}

// Open opens the HDF5 file at path read-only.
func Open(path string) (*File, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("hdf5: %w", err)
	}
	lock()
	defer unlock()
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	if C.pt_is_hdf5(cs) <= 0 {
		return nil, fmt.Errorf("hdf5 %s: not an HDF5 file (no HDF5 signature: truncated, corrupt or another format)", path)
	}
	id := C.pt_open(cs)
	if id < 0 {
		return nil, fmt.Errorf("hdf5 %s: open: %s", path, lastError())
	}
	return &File{path: path, id: id}, nil
}

// Close closes the file.
func (f *File) Close() error {
	lock()
	defer unlock()
	if f.id < 0 {
		return nil
	}
	if C.H5Fclose(f.id) < 0 {
		f.id = -1
		return fmt.Errorf("hdf5 %s: close: %s", f.path, lastError())
	}
	f.id = -1
	return nil
}

// Datasets lists the paths of every dataset in the file ("data/demo_0/
// actions", no leading slash), sorted.
func (f *File) Datasets() ([]string, error) {
	lock()
	defer unlock()
	var out *C.char
	var n C.size_t
	if C.pt_list_datasets(f.id, &out, &n) < 0 {
		return nil, fmt.Errorf("hdf5 %s: list datasets: %s", f.path, lastError())
	}
	defer C.free(unsafe.Pointer(out))
	raw := C.GoStringN(out, C.int(n))
	var names []string
	for _, s := range strings.Split(raw, "\x00") {
		if s != "" {
			names = append(names, s)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Kind is an element type's class.
type Kind byte

// The element classes read.
const (
	Uint  Kind = 'u'
	Int   Kind = 'i'
	Float Kind = 'f'
	// Other is any other class (strings, compounds, references...): such
	// a dataset is listed but not read.
	Other Kind = '?'
)

// DType is a dataset's element type as stored.
type DType struct {
	Kind      Kind
	Size      int
	BigEndian bool
	// Class names the HDF5 class of an Other type ("string", "compound").
	Class string
}

// String is the type in NumPy's notation ("<f8", "|u1").
func (d DType) String() string {
	if d.Kind == Other {
		return d.Class
	}
	order := "<"
	switch {
	case d.Size == 1:
		order = "|"
	case d.BigEndian:
		order = ">"
	}
	return fmt.Sprintf("%s%c%d", order, d.Kind, d.Size)
}

// Filter is one filter of a dataset's pipeline.
type Filter struct {
	// ID is the HDF5 filter number (1 deflate, 2 shuffle, 3 fletcher32,
	// 4 szip, 5 nbit, 6 scaleoffset, 32000 lzf, ...).
	ID int
	// Name is the name stored with the filter, if any.
	Name string
	// Params are the filter's client values (gzip: the level).
	Params []uint
	// Available reports whether this process can decode it.
	Available bool
}

// String names the filter as inspect shows it: "gzip(4)", "lzf",
// "shuffle", or "filter 32001 (unknown)".
func (f Filter) String() string {
	switch f.ID {
	case 1:
		if len(f.Params) > 0 {
			return fmt.Sprintf("gzip(%d)", f.Params[0])
		}
		return "gzip"
	case 2:
		return "shuffle"
	case 3:
		return "fletcher32"
	case 4:
		return "szip"
	case 5:
		return "nbit"
	case 6:
		return "scaleoffset"
	case LZF:
		return "lzf"
	}
	name := f.Name
	if name == "" {
		name = "unnamed"
	}
	if !f.Available {
		return fmt.Sprintf("filter %d (%s, not available)", f.ID, name)
	}
	return fmt.Sprintf("filter %d (%s)", f.ID, name)
}

// LZF is h5py's LZF filter number.
const LZF = 32000
