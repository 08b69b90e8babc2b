package pystack

import (
	"slices"
	"testing"
)

// blockMem is memory that records the pages each vectored read asks for.
type blockMem struct {
	data   []byte
	blocks [][]uint64
}

func (m *blockMem) ReadAt(p []byte, addr uint64) error {
	if addr+uint64(len(p)) > uint64(len(m.data)) {
		return &FaultError{addr, len(p), errTruncated}
	}
	copy(p, m.data[addr:])
	return nil
}

func (m *blockMem) ReadBlocks(bufs [][]byte, addrs []uint64) int {
	m.blocks = append(m.blocks, slices.Clone(addrs))
	for i, b := range bufs {
		if m.ReadAt(b, addrs[i]) != nil {
			return i
		}
	}
	return len(bufs)
}

// TestPrefetchFollowsTheReads: a pass prefetches the pages the last pass
// read from, not every page it ever prefetched (a set that only grew made
// each read of a long run copy every page its stacks had ever touched).
func TestPrefetchFollowsTheReads(t *testing.T) {
	m := &blockMem{data: make([]byte, 4*pageSize)}
	for i := range m.data {
		m.data[i] = byte(i / pageSize)
	}
	c := newPageCache(m)
	pass := func(pages ...uint64) {
		c.reset()
		c.prefetch()
		for _, pg := range pages {
			b := make([]byte, 8)
			if err := c.ReadAt(b, pg*pageSize+16); err != nil || b[0] != byte(pg) {
				t.Fatalf("page %d: %v, read %d", pg, err, b[0])
			}
		}
	}
	pass(0, 1, 2)
	pass(0)
	pass(0)
	if len(m.blocks) != 2 {
		t.Fatalf("prefetches %v, want 2 (none before the first pass)", m.blocks)
	}
	first, second := m.blocks[0], m.blocks[1]
	slices.Sort(first)
	if !slices.Equal(first, []uint64{0, pageSize, 2 * pageSize}) || !slices.Equal(second, []uint64{0}) {
		t.Errorf("prefetched %v then %v, want the 3 pages read, then only the one read since", first, second)
	}
}
