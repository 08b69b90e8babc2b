package zarr

import (
	"fmt"
	"sync"
)

// pipeline is how one chunk is encoded: its axes permuted (the v3
// transpose codec), its elements laid out in the array's byte order (the
// v3 bytes codec; the DType records the order, so decoding leaves bytes as
// stored), then the bytes-to-bytes codecs in turn (a compressor,
// checksums). A Zarr v2 chunk's pipeline is its compressor alone.
type pipeline struct {
	shape    []int // the decoded chunk shape
	itemSize int
	// order is the axis permutation of the stored chunk (stored axis i is
	// decoded axis order[i]); nil for C order.
	order []int
	// bb holds the bytes-to-bytes codecs in encoding order.
	bb []Codec
	// sizes[i] is the length bb[i] decodes to, or -1 when it is only
	// known from its input (a checksum outside the compressor).
	sizes []int
}

// sized is a bytes-to-bytes codec that adds a fixed number of bytes (a
// checksum), so the lengths through it are known in both directions.
type sized interface{ overhead() int }

// newPipeline checks a bytes-to-bytes chain for a chunk of the given shape
// and works out the length each codec decodes to. At most one codec may
// be a compressor: the length a compressor decodes to must be known, and
// it is not beyond a second one.
func newPipeline(shape []int, itemSize int, order []int, bb []Codec) (pipeline, error) {
	p := pipeline{shape: shape, itemSize: itemSize, order: order, bb: bb, sizes: make([]int, len(bb))}
	n := itemSize
	for _, s := range shape {
		n *= s
	}
	for i, c := range bb {
		p.sizes[i] = n
		if n < 0 {
			if _, ok := c.(sized); !ok {
				return p, fmt.Errorf("codecs %s and %s: at most one compressor per chunk is supported", bb[firstCompressor(bb)].ID(), c.ID())
			}
		}
		if f, ok := c.(sized); ok && n >= 0 {
			n += f.overhead()
		} else {
			n = -1
		}
	}
	return p, nil
}

func firstCompressor(bb []Codec) int {
	for i, c := range bb {
		if _, ok := c.(sized); !ok {
			return i
		}
	}
	return 0
}

// compressor is the pipeline's compressor, nil when there is none.
func (p *pipeline) compressor() Codec {
	for _, c := range p.bb {
		if _, ok := c.(sized); !ok {
			return c
		}
	}
	return nil
}

// scratch holds buffers for the intermediate steps of decoding and
// encoding; workers decode concurrently, so each call takes its own.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

func getScratch(n int) *[]byte {
	b := scratch.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	*b = (*b)[:n]
	return b
}

// decode decodes the stored bytes raw into dst, a whole decoded chunk in
// C order and stored byte order.
func (p *pipeline) decode(dst, raw []byte) error {
	if p.order == nil {
		return p.decodeBytes(dst, raw)
	}
	tmp := getScratch(len(dst))
	defer scratch.Put(tmp)
	if err := p.decodeBytes(*tmp, raw); err != nil {
		return err
	}
	permute(dst, *tmp, permuted(p.shape, p.order), inversePerm(p.order), p.itemSize)
	return nil
}

// decodeBytes undoes the bytes-to-bytes codecs, last first, into out.
func (p *pipeline) decodeBytes(out, raw []byte) error {
	if len(p.bb) == 0 {
		if err := checkLen("raw chunk", len(raw), len(out)); err != nil {
			return err
		}
		copy(out, raw)
		return nil
	}
	cur := raw
	for i := len(p.bb) - 1; i >= 1; i-- {
		n := p.sizes[i]
		if n < 0 {
			n = len(cur) - p.bb[i].(sized).overhead()
			if n < 0 {
				return fmt.Errorf("%s: %d bytes is too short", p.bb[i].ID(), len(cur))
			}
		}
		b := getScratch(n)
		defer scratch.Put(b)
		if err := p.bb[i].Decode(*b, cur); err != nil {
			return err
		}
		cur = *b
	}
	return p.bb[0].Decode(out, cur)
}

// encode encodes a whole decoded chunk src and returns its stored bytes
// (src itself when there is nothing to do).
func (p *pipeline) encode(src []byte) ([]byte, error) {
	cur := src
	if p.order != nil {
		tmp := make([]byte, len(src))
		permute(tmp, src, p.shape, p.order, p.itemSize)
		cur = tmp
	}
	for _, c := range p.bb {
		out, err := c.Encode(nil, cur, p.itemSize)
		if err != nil {
			return nil, err
		}
		cur = out
	}
	return cur, nil
}

// encodedSize is the stored length of a chunk when every codec has a
// fixed overhead (a shard index), or -1.
func (p *pipeline) encodedSize() int {
	n := p.itemSize
	for _, s := range p.shape {
		n *= s
	}
	for _, c := range p.bb {
		f, ok := c.(sized)
		if !ok {
			return -1
		}
		n += f.overhead()
	}
	return n
}
