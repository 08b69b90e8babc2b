package pystack

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Memory is the memory the reader reads: another process's (process_vm_readv),
// or in tests and fuzzing any bytes at all.
type Memory interface {
	// ReadAt fills p with the bytes at addr, all of them or an error.
	ReadAt(p []byte, addr uint64) error
}

// FaultError is a read of the target's memory that failed: an address
// not mapped (a freed object, a pointer read mid-change), or a read cut
// short.
type FaultError struct {
	Addr uint64
	Len  int
	Err  error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("read %d bytes at %#x: %v", e.Len, e.Addr, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// processMemory reads a live process's memory with process_vm_readv,
// which neither stops nor signals it. Not safe for concurrent use (it
// reuses its vectors).
type processMemory struct {
	pid    int
	local  []unix.Iovec
	remote []unix.RemoteIovec
	mem    *os.File // /proc/PID/mem, where process_vm_readv is missing
}

// newProcessMemory is pid's memory.
func newProcessMemory(pid int) *processMemory { return &processMemory{pid: pid} }

// ReadAt reads len(p) bytes at addr.
func (m *processMemory) ReadAt(p []byte, addr uint64) error {
	if len(p) == 0 {
		return nil
	}
	if m.mem != nil {
		return m.pread(p, addr)
	}
	n, err := m.readv([][]byte{p}, []uint64{addr})
	switch {
	case errors.Is(err, unix.ENOSYS):
		f, oerr := os.Open(fmt.Sprintf("/proc/%d/mem", m.pid))
		if oerr != nil {
			return &FaultError{addr, len(p), oerr}
		}
		m.mem = f
		return m.pread(p, addr)
	case err != nil:
		return &FaultError{addr, len(p), err}
	case n != len(p):
		return &FaultError{addr, len(p), fmt.Errorf("read %d bytes: %w", n, errTruncated)}
	}
	return nil
}

// ReadBlocks reads bufs[i] at addrs[i] in one call, in order, and says
// how many it filled before one failed (every one: len(bufs)).
func (m *processMemory) ReadBlocks(bufs [][]byte, addrs []uint64) int {
	if m.mem != nil {
		for i, b := range bufs {
			if m.pread(b, addrs[i]) != nil {
				return i
			}
		}
		return len(bufs)
	}
	n, _ := m.readv(bufs, addrs)
	for i, b := range bufs {
		if n < len(b) {
			return i
		}
		n -= len(b)
	}
	return len(bufs)
}

// readv is one process_vm_readv of bufs from addrs: the bytes it read.
func (m *processMemory) readv(bufs [][]byte, addrs []uint64) (int, error) {
	m.local, m.remote = m.local[:0], m.remote[:0]
	for i, b := range bufs {
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		m.local = append(m.local, v)
		m.remote = append(m.remote, unix.RemoteIovec{Base: uintptr(addrs[i]), Len: len(b)})
	}
	n, err := unix.ProcessVMReadv(m.pid, m.local, m.remote, 0)
	clear(m.local) // keep no pointer into bufs
	return n, err
}

// pread reads through /proc/PID/mem.
func (m *processMemory) pread(p []byte, addr uint64) error {
	if addr > 1<<63-1 {
		return &FaultError{addr, len(p), errTruncated}
	}
	n, err := m.mem.ReadAt(p, int64(addr))
	if n == len(p) {
		return nil
	}
	if err == nil {
		err = errTruncated
	}
	return &FaultError{addr, len(p), err}
}

// Close closes /proc/PID/mem if it was opened.
func (m *processMemory) Close() error {
	if m.mem == nil {
		return nil
	}
	return m.mem.Close()
}

// errTruncated is a read that returned fewer bytes than asked.
var errTruncated = errors.New("truncated read")

// pageSize is the block the page cache reads: one read serves every
// object in it (frames on 3.11's frame stack lie side by side). It is at
// most the smallest page the kernel maps, so a block is readable whole
// or not at all.
const pageSize = 4096

// blockReader is a Memory that reads many blocks in one call.
type blockReader interface {
	// ReadBlocks fills bufs[i] from addrs[i], in order, and says how many
	// it filled before one failed.
	ReadBlocks(bufs [][]byte, addrs []uint64) int
}

// maxBlocks is the most pages one vectored read asks for.
const maxBlocks = 64

// pageCache serves reads of one pass over the stacks from whole pages,
// so that neighbouring objects cost one system call. reset forgets them
// before the next pass (the target keeps running); prefetch then reads
// again, in one vectored call, the pages the last pass read (the thread
// states, frames and C frames of threads that mostly stay where they
// were).
type pageCache struct {
	mem   Memory
	pages map[uint64]*page
	free  []*page
	last  []uint64 // the pages the last pass read
	bufs  [][]byte
	batch []*page
}

// page is one block of the target's memory, or why it could not be read;
// used: a read of this pass took bytes from it.
type page struct {
	data [pageSize]byte
	err  error
	used bool
}

func newPageCache(mem Memory) *pageCache {
	return &pageCache{mem: mem, pages: make(map[uint64]*page)}
}

// reset empties the cache, keeping the pages for reuse and the list of
// those the pass read from (a page prefetched but not read from is not
// prefetched again: the set follows the stacks as they change).
func (c *pageCache) reset() {
	c.last = c.last[:0]
	for base, pg := range c.pages {
		if pg.err == nil && pg.used {
			c.last = append(c.last, base)
		}
		c.free = append(c.free, pg)
	}
	clear(c.pages)
}

// prefetch reads the pages the last pass read, with as few calls as the
// memory allows; a page that fails is left to be read (and fail) alone.
func (c *pageCache) prefetch() {
	br, ok := c.mem.(blockReader)
	if !ok {
		return
	}
	todo := c.last
	for len(todo) > 0 {
		batch := todo[:min(len(todo), maxBlocks)]
		c.bufs, c.batch = c.bufs[:0], c.batch[:0]
		for range batch {
			pg := c.newPage()
			c.batch = append(c.batch, pg)
			c.bufs = append(c.bufs, pg.data[:])
		}
		n := br.ReadBlocks(c.bufs, batch)
		for i, pg := range c.batch {
			if i < n {
				pg.err, pg.used = nil, false
				c.pages[batch[i]] = pg
			} else {
				c.free = append(c.free, pg)
			}
		}
		todo = todo[min(n+1, len(batch)):]
	}
	clear(c.bufs)
	clear(c.batch)
}

// newPage is a page from the free list, or a new one.
func (c *pageCache) newPage() *page {
	if n := len(c.free); n > 0 {
		pg := c.free[n-1]
		c.free = c.free[:n-1]
		return pg
	}
	return new(page)
}

// ReadAt reads len(p) bytes at addr from cached pages; a read longer than
// a page goes to the memory directly.
func (c *pageCache) ReadAt(p []byte, addr uint64) error {
	if len(p) > pageSize {
		return c.mem.ReadAt(p, addr)
	}
	for len(p) > 0 {
		base := addr &^ (pageSize - 1)
		pg := c.page(base)
		if pg.err != nil {
			return pg.err
		}
		pg.used = true
		n := copy(p, pg.data[addr-base:])
		p = p[n:]
		addr += uint64(n)
		if addr == 0 && len(p) > 0 {
			return &FaultError{base, len(p), errTruncated}
		}
	}
	return nil
}

// page is the cached page at base, read now if it is not cached.
func (c *pageCache) page(base uint64) *page {
	if pg, ok := c.pages[base]; ok {
		return pg
	}
	pg := c.newPage()
	pg.err, pg.used = c.mem.ReadAt(pg.data[:], base), false
	c.pages[base] = pg
	return pg
}
