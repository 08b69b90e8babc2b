package hdf5

/*
#include "hdf5_glue.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// errLZF is a corrupt LZF block, or one that decodes to more than asked.
var errLZF = errors.New("corrupt LZF data, or longer than the chunk")

// lzfDecode decodes an LZF block into at most n bytes with the C decoder
// the LZF filter uses. It exists for the tests (cgo is not allowed in
// test files), which compare it with a Go decoder on fuzzed input.
func lzfDecode(src []byte, n int) ([]byte, error) {
	if len(src) == 0 || n == 0 {
		return nil, errLZF
	}
	out := make([]byte, n)
	got := C.pt_lzf_decompress((*C.uchar)(unsafe.Pointer(&src[0])), C.uint(len(src)), (*C.uchar)(unsafe.Pointer(&out[0])), C.uint(n))
	if got == 0 {
		return nil, errLZF
	}
	return out[:got], nil
}
