package mp4

import "encoding/binary"

// sampleData is where a track's samples lie: their sizes (stsz/stz2),
// the chunk offsets (stco/co64) and the samples per chunk (stsc).
type sampleData struct {
	size    uint32   // every sample's size, when sizes is nil
	sizes   []uint32 // per-sample sizes
	offsets []uint64 // chunk offsets
	runs    []chunkRun
}

// chunkRun is an stsc entry: from chunk First (1-based) on, PerChunk
// samples a chunk.
type chunkRun struct {
	First, PerChunk uint32
}

func (d *sampleData) sampleSize(i int) uint64 {
	if d.sizes == nil {
		return uint64(d.size)
	}
	return uint64(d.sizes[i])
}

// dataEnd is the file offset where the last byte of sample data lies,
// walking the chunks: 0 when the track has no chunk offsets or runs.
func (d *sampleData) dataEnd(samples int) int64 {
	const limit = 1 << 62
	var end uint64
	s := 0
	for i, r := range d.runs {
		last := uint64(len(d.offsets))
		if i+1 < len(d.runs) {
			last = min(last, uint64(d.runs[i+1].First-1))
		}
		for c := uint64(r.First - 1); c < last && s < samples; c++ {
			n := int(min(uint64(r.PerChunk), uint64(samples-s)))
			e := d.offsets[c]
			if d.sizes == nil {
				e += uint64(n) * uint64(d.size)
			} else {
				for k := s; k < s+n; k++ {
					e += d.sampleSize(k)
				}
			}
			s += n
			end = max(end, min(e, limit))
		}
	}
	return int64(end)
}

func (p *parser) stco(b box, t *Track) error {
	buf, err := p.fullBody(b, 0, 4)
	if err != nil {
		return err
	}
	width := uint64(4)
	if b.typ == "co64" {
		width = 8
	}
	n := uint64(binary.BigEndian.Uint32(buf[4:]))
	if n*width != uint64(len(buf)-8) {
		return p.fail(b, "%d entries need %d bytes, the box holds %d", n, n*width, len(buf)-8)
	}
	t.data.offsets = make([]uint64, n)
	for i := range t.data.offsets {
		if width == 4 {
			t.data.offsets[i] = uint64(binary.BigEndian.Uint32(buf[8+4*i:]))
		} else {
			t.data.offsets[i] = binary.BigEndian.Uint64(buf[8+8*i:])
		}
	}
	return nil
}

func (p *parser) stsc(b box, t *Track) error {
	buf, err := p.fullBody(b, 0, 4)
	if err != nil {
		return err
	}
	n := uint64(binary.BigEndian.Uint32(buf[4:]))
	if n*12 != uint64(len(buf)-8) {
		return p.fail(b, "%d entries need %d bytes, the box holds %d", n, n*12, len(buf)-8)
	}
	t.data.runs = make([]chunkRun, n)
	prev := uint32(0)
	for i := range t.data.runs {
		e := buf[8+12*i:]
		r := chunkRun{First: binary.BigEndian.Uint32(e), PerChunk: binary.BigEndian.Uint32(e[4:])}
		if r.First <= prev {
			return p.fail(b, "entry %d starts at chunk %d after chunk %d: must be increasing and 1-based", i, r.First, prev)
		}
		prev = r.First
		t.data.runs[i] = r
	}
	return nil
}

// readSizes keeps stsz's constant size, or decodes its or stz2's
// per-sample sizes from body (past the count), for n samples.
func (t *Track) readSizes(typ string, body []byte, constant uint32, bits byte, n int) {
	if typ == "stsz" && constant != 0 {
		t.data.size = constant
		return
	}
	t.data.sizes = make([]uint32, n)
	for i := range t.data.sizes {
		switch {
		case typ == "stsz" || bits == 0:
			t.data.sizes[i] = binary.BigEndian.Uint32(body[4*i:])
		case bits == 16:
			t.data.sizes[i] = uint32(binary.BigEndian.Uint16(body[2*i:]))
		case bits == 8:
			t.data.sizes[i] = uint32(body[i])
		default: // 4 bits, high nibble first
			t.data.sizes[i] = uint32(body[i/2] >> (4 * (1 - i%2)) & 0xf)
		}
	}
}
