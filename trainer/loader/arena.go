package loader

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// arena hands out the frame store's fixed-size buffers from one anonymous
// mapping, asking the kernel for huge pages. Filling the store writes
// frames tile by tile across hundreds of buffers at once: with 4 KiB pages
// nearly every write missed the TLB, and first touches of fresh Go
// allocations cost a page fault per 4 KiB. Memory is committed only as
// buffers are first used. Without mmap it falls back to the Go heap.
type arena struct {
	mem  []byte
	size int      // buffer size
	n    int      // buffers in mem
	used int      // buffers handed out from mem so far
	free [][]byte // released buffers
	mmap bool
}

func newArena(capBytes int64, size int) *arena {
	a := &arena{size: size}
	if size <= 0 {
		return a
	}
	n := int(capBytes / int64(size))
	if n == 0 {
		return a
	}
	mem, err := unix.Mmap(-1, 0, n*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return a
	}
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE) // a hint; fine if refused
	a.mem, a.n, a.mmap = mem, n, true
	return a
}

// get returns a buffer of the arena's size.
func (a *arena) get() []byte {
	if k := len(a.free); k > 0 {
		b := a.free[k-1]
		a.free = a.free[:k-1]
		return b
	}
	if a.used < a.n {
		a.used++
		return a.mem[(a.used-1)*a.size : a.used*a.size : a.used*a.size]
	}
	return make([]byte, a.size)
}

// put takes a buffer back for reuse.
func (a *arena) put(b []byte) {
	if len(b) == a.size && (a.owns(b) || len(a.free) < 64) {
		a.free = append(a.free, b)
	}
}

func (a *arena) owns(b []byte) bool {
	if len(a.mem) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(a.mem)))
	return p >= lo && p < lo+uintptr(len(a.mem))
}

// release unmaps the arena; no buffer may be used afterwards.
func (a *arena) release() {
	if a.mmap {
		_ = unix.Munmap(a.mem)
		a.mem, a.free, a.mmap = nil, nil, false
	}
}
