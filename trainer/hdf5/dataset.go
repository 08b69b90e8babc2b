package hdf5

/*
#include <stdlib.h>
#include "hdf5_glue.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Dataset is an open dataset and what its header says.
type Dataset struct {
	file *File
	id   C.hid_t
	// Path is the dataset's path in the file, without a leading slash.
	Path  string
	Shape []int
	DType DType
	// Chunks is the chunk shape; nil for a contiguous or compact dataset.
	Chunks  []int
	Filters []Filter
	// StoredBytes is the dataset's size on disk (compressed chunks).
	StoredBytes int64
}

// maxRank bounds the rank of the datasets read (libhdf5's own is 32).
const maxRank = 32

// Dataset opens the dataset at path and reads its header.
func (f *File) Dataset(path string) (*Dataset, error) {
	lock()
	defer unlock()
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var info C.pt_info
	id := C.pt_dataset_open(f.id, cs, &info)
	if id < 0 {
		return nil, fmt.Errorf("hdf5 %s: dataset %s: %s", f.path, path, lastError())
	}
	d := &Dataset{file: f, id: id, Path: path, StoredBytes: int64(info.stored)}
	for i := 0; i < int(info.rank); i++ {
		d.Shape = append(d.Shape, int(info.dims[i]))
		if info.chunked != 0 {
			d.Chunks = append(d.Chunks, int(info.chunks[i]))
		}
	}
	d.DType = DType{Kind: Kind(info.kind), Size: int(info.size), BigEndian: info.big_endian != 0, Class: C.GoString(&info.class_name[0])}
	for i := 0; i < int(info.nfilters); i++ {
		fi := info.filters[i]
		flt := Filter{ID: int(fi.id), Name: C.GoString(&fi.name[0]), Available: fi.available != 0}
		for j := 0; j < int(fi.nparams); j++ {
			flt.Params = append(flt.Params, uint(fi.params[j]))
		}
		d.Filters = append(d.Filters, flt)
	}
	return d, nil
}

// Close closes the dataset.
func (d *Dataset) Close() {
	lock()
	defer unlock()
	if d.id >= 0 {
		C.H5Dclose(d.id)
		d.id = -1
	}
}

// RowBytes is the size of one row (one index of the first axis) in the
// native byte order.
func (d *Dataset) RowBytes() int64 {
	n := int64(d.DType.Size)
	for _, s := range d.Shape[min(1, len(d.Shape)):] {
		n *= int64(s)
	}
	return n
}

// Missing returns the first filter of the dataset this process cannot
// decode, if any.
func (d *Dataset) Missing() (Filter, bool) {
	for _, f := range d.Filters {
		if !f.Available {
			return f, true
		}
	}
	return Filter{}, false
}

// ReadRows reads rows [start, start+n) of the first axis into dst (C order,
// little-endian: the machine's byte order), which must hold n rows.
// Integer and float datasets only.
func (d *Dataset) ReadRows(start, n int, dst []byte) error {
	if d.DType.Kind == Other {
		return fmt.Errorf("hdf5 %s: dataset %s is of class %s: only integer and float datasets are read", d.file.path, d.Path, d.DType.Class)
	}
	if len(d.Shape) == 0 {
		return fmt.Errorf("hdf5 %s: dataset %s is a scalar: no rows", d.file.path, d.Path)
	}
	if start < 0 || n < 0 || start+n > d.Shape[0] {
		return fmt.Errorf("hdf5 %s: dataset %s rows %d..%d outside its %d", d.file.path, d.Path, start, start+n, d.Shape[0])
	}
	if want := int64(n) * d.RowBytes(); int64(len(dst)) < want {
		return fmt.Errorf("hdf5 %s: dataset %s: buffer of %d bytes for %d rows of %d", d.file.path, d.Path, len(dst), n, d.RowBytes())
	}
	if n == 0 || d.RowBytes() == 0 {
		return nil
	}
	if f, ok := d.Missing(); ok {
		return fmt.Errorf("hdf5 %s: dataset %s is compressed with %s, which this libhdf5 cannot decode (make the filter's plugin available through HDF5_PLUGIN_PATH, where the writer's HDF5 found it)", d.file.path, d.Path, f)
	}
	lock()
	defer unlock()
	if C.pt_read_rows(d.id, C.hsize_t(start), C.hsize_t(n), unsafe.Pointer(&dst[0])) < 0 {
		return fmt.Errorf("hdf5 %s: dataset %s rows %d..%d: %s", d.file.path, d.Path, start, start+n, lastError())
	}
	return nil
}
