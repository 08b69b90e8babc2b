package mp4

import (
	"encoding/binary"
)

// track parses a trak box.
func (p *parser) track(trak box, index int) (*Track, error) {
	t := &Track{Index: index}
	mdia, err := p.find(trak, "mdia")
	if err != nil {
		return nil, err
	}
	var minf *box
	err = p.children(mdia, func(b box) error {
		switch b.typ {
		case "mdhd":
			return p.mdhd(b, t)
		case "hdlr":
			return p.hdlr(b, t)
		case "minf":
			minf = &b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if t.Timescale == 0 {
		return nil, p.fail(mdia, "no mdhd box with a non-zero timescale")
	}
	if minf == nil {
		return nil, p.fail(mdia, "no minf box")
	}
	stbl, err := p.find(*minf, "stbl")
	if err != nil {
		return nil, err
	}
	if err := p.stbl(stbl, t); err != nil {
		return nil, err
	}
	return t, nil
}

// find returns the first child of parent of type typ.
func (p *parser) find(parent box, typ string) (box, error) {
	var out *box
	err := p.children(parent, func(b box) error {
		if b.typ == typ && out == nil {
			out = &b
		}
		return nil
	})
	if err != nil {
		return box{}, err
	}
	if out == nil {
		return box{}, p.fail(parent, "no %s box inside", typ)
	}
	return *out, nil
}

// fullBody reads a full box's body and checks its version is at most
// maxVersion and its length at least min bytes past the version and flags.
func (p *parser) fullBody(b box, maxVersion byte, min int) ([]byte, error) {
	buf, err := p.body(b)
	if err != nil {
		return nil, err
	}
	if len(buf) < 4+min {
		return nil, p.fail(b, "body of %d bytes, want at least %d: truncated", len(buf), 4+min)
	}
	if buf[0] > maxVersion {
		return nil, p.fail(b, "version %d is not supported (at most %d)", buf[0], maxVersion)
	}
	return buf, nil
}

func (p *parser) mdhd(b box, t *Track) error {
	buf, err := p.fullBody(b, 1, 16)
	if err != nil {
		return err
	}
	if buf[0] == 1 {
		if len(buf) < 32 {
			return p.fail(b, "version 1 body of %d bytes, want at least 32: truncated", len(buf))
		}
		t.Timescale = binary.BigEndian.Uint32(buf[20:])
		t.Duration = binary.BigEndian.Uint64(buf[24:])
	} else {
		t.Timescale = binary.BigEndian.Uint32(buf[12:])
		t.Duration = uint64(binary.BigEndian.Uint32(buf[16:]))
	}
	if t.Timescale == 0 {
		return p.fail(b, "timescale 0")
	}
	return nil
}

func (p *parser) hdlr(b box, t *Track) error {
	buf, err := p.fullBody(b, 0, 8)
	if err != nil {
		return err
	}
	t.Handler = fourCC(buf[8:12])
	return nil
}

// stbl parses the sample table: codec, timing, sizes and keyframes.
func (p *parser) stbl(stbl box, t *Track) error {
	have := map[string]bool{}
	err := p.children(stbl, func(b box) error {
		parse := map[string]func(box, *Track) error{"stsd": p.stsd, "stts": p.stts, "stss": p.stss, "stsz": p.stsz, "stz2": p.stsz,
			"stco": p.stco, "co64": p.stco, "stsc": p.stsc}[b.typ]
		if parse == nil {
			return nil
		}
		key := map[string]string{"stz2": "stsz", "co64": "stco"}[b.typ]
		if key == "" {
			key = b.typ
		}
		if have[key] {
			return p.fail(b, "a second %s table", key)
		}
		have[key] = true
		return parse(b, t)
	})
	if err != nil {
		return err
	}
	for _, need := range []string{"stsd", "stts"} {
		if !have[need] {
			return p.fail(stbl, "no %s box: the sample table is incomplete", need)
		}
	}
	if !have["stsz"] {
		return p.fail(stbl, "no stsz or stz2 box: the sample count is unknown")
	}
	var timed uint64
	for _, r := range t.Deltas {
		timed += uint64(r.Count)
	}
	if timed != uint64(t.Samples) {
		return p.fail(stbl, "stts times %d samples but stsz sizes %d: the index is inconsistent", timed, t.Samples)
	}
	if n := len(t.Keyframes); n > 0 && t.Keyframes[n-1] >= t.Samples {
		return p.fail(stbl, "stss names sample %d as a keyframe but the track has %d samples", t.Keyframes[n-1]+1, t.Samples)
	}
	t.DataEnd = t.data.dataEnd(t.Samples)
	return nil
}

func (p *parser) stsd(b box, t *Track) error {
	buf, err := p.fullBody(b, 1, 4)
	if err != nil {
		return err
	}
	if binary.BigEndian.Uint32(buf[4:]) == 0 {
		return p.fail(b, "no sample entries: the codec is unknown")
	}
	e := buf[8:]
	if len(e) < 8 {
		return p.fail(b, "first sample entry truncated (%d bytes)", len(e))
	}
	size := binary.BigEndian.Uint32(e)
	if size < 8 || uint64(size) > uint64(len(e)) {
		return p.fail(b, "first sample entry's size %d does not fit its %d bytes", size, len(e))
	}
	t.Codec = fourCC(e[4:8])
	if t.Handler == "vide" {
		if size < 36 {
			return p.fail(b, "visual sample entry %s of %d bytes has no frame size (want >= 36)", t.Codec, size)
		}
		t.Width, t.Height = int(binary.BigEndian.Uint16(e[32:])), int(binary.BigEndian.Uint16(e[34:]))
	}
	return nil
}

func (p *parser) stts(b box, t *Track) error {
	buf, err := p.fullBody(b, 0, 4)
	if err != nil {
		return err
	}
	n := uint64(binary.BigEndian.Uint32(buf[4:]))
	if n*8 != uint64(len(buf)-8) {
		return p.fail(b, "%d entries need %d bytes, the box holds %d", n, n*8, len(buf)-8)
	}
	t.Deltas = make([]TimeRun, n)
	for i := range t.Deltas {
		e := buf[8+8*i:]
		t.Deltas[i] = TimeRun{Count: binary.BigEndian.Uint32(e), Delta: binary.BigEndian.Uint32(e[4:])}
	}
	return nil
}

func (p *parser) stss(b box, t *Track) error {
	buf, err := p.fullBody(b, 0, 4)
	if err != nil {
		return err
	}
	n := uint64(binary.BigEndian.Uint32(buf[4:]))
	if n*4 != uint64(len(buf)-8) {
		return p.fail(b, "%d entries need %d bytes, the box holds %d", n, n*4, len(buf)-8)
	}
	t.Keyframes = make([]int, n)
	prev := uint32(0)
	for i := range t.Keyframes {
		s := binary.BigEndian.Uint32(buf[8+4*i:])
		if s <= prev {
			return p.fail(b, "entry %d names sample %d after sample %d: must be increasing and 1-based", i, s, prev)
		}
		prev = s
		t.Keyframes[i] = int(s - 1)
	}
	return nil
}

// maxSamples bounds a track's sample count (a 120 fps day is 10 million).
const maxSamples = 1 << 28

func (p *parser) stsz(b box, t *Track) error {
	buf, err := p.fullBody(b, 0, 8)
	if err != nil {
		return err
	}
	n := uint64(binary.BigEndian.Uint32(buf[8:]))
	if n > maxSamples {
		return p.fail(b, "%d samples is more than the %d this reader accepts", n, maxSamples)
	}
	var need uint64
	constant, bits := binary.BigEndian.Uint32(buf[4:]), byte(0)
	if b.typ == "stsz" {
		if constant == 0 { // one size per sample
			need = 4 * n
		}
	} else {
		switch bits = buf[7]; bits {
		case 4, 8, 16:
			need = (n*uint64(bits) + 7) / 8
		default:
			return p.fail(b, "field size %d: want 4, 8 or 16", bits)
		}
	}
	if uint64(len(buf)-12) < need {
		return p.fail(b, "%d sample sizes need %d bytes, the box holds %d: truncated", n, need, len(buf)-12)
	}
	t.Samples = int(n)
	t.readSizes(b.typ, buf[12:], constant, bits, t.Samples)
	return nil
}
