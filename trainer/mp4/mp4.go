// Package mp4 reads the index of an MP4 (ISO base media) file: for each
// video track its codec, frame size, timing, frame count and keyframes,
// from the moov box's sample tables, without reading or decoding the
// media data. pipetrain's data inspect and import use it to predict what
// a one-frame read costs and to check what a decoder delivers.
//
// Only the boxes on the path moov/trak/mdia/{mdhd,hdlr,minf/stbl/{stsd,
// stts,stss,stsz|stz2,stco|co64,stsc}} are parsed; every other box is skipped by its
// size. Every malformed input is an *Error naming the file, the box path
// and offset, and the cause.
package mp4

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// Error is a malformed or unsupported MP4 file.
type Error struct {
	File   string // the file's name as given
	Box    string // the box path, e.g. "moov/trak[1]/mdia/minf/stbl/stsz"
	Offset int64  // the box's offset in the file
	Cause  string
}

// Error says the file, the box and offset, and the cause.
func (e *Error) Error() string {
	if e.Box == "" {
		return fmt.Sprintf("mp4 %s: %s", e.File, e.Cause)
	}
	return fmt.Sprintf("mp4 %s: box %s at offset %d: %s", e.File, e.Box, e.Offset, e.Cause)
}

// File is the parsed index of an MP4 file.
type File struct {
	Name string
	// Size is the file's size in bytes.
	Size int64
	// Tracks holds every track, video or not, in file order.
	Tracks []*Track
}

// Track is one track's index.
type Track struct {
	// Index is the track's position among the file's tracks, 0-based
	// (ffmpeg's stream index when every track is a stream).
	Index int
	// Handler is the mdia/hdlr handler type: "vide" for video, "soun"...
	Handler string
	// Codec is the first sample entry's four-character code (avc1, hvc1,
	// hev1, av01, vp09, mp4v ...).
	Codec string
	// Width and Height are the visual sample entry's frame size (video).
	Width, Height int
	// Timescale is the media's time units per second; Duration is in them.
	Timescale uint32
	Duration  uint64
	// Samples is the number of samples (frames, for video) from stsz.
	Samples int
	// Deltas is the stts table: runs of samples with one duration.
	Deltas []TimeRun
	// Keyframes holds the 0-based indices of the sync samples, ascending;
	// nil when the track has no stss, meaning every sample is one.
	Keyframes []int
	// DataEnd is the file offset just past the track's last sample data,
	// from the chunk offsets, samples per chunk and sizes (0 when the
	// index has no chunk table). Past File.Size, the file is truncated.
	DataEnd int64

	data sampleData
}

// TimeRun is an stts entry: Count samples of Delta time units each.
type TimeRun struct {
	Count, Delta uint32
}

// Open reads the index of the MP4 file at path.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mp4: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mp4: %w", err)
	}
	return Parse(f, st.Size(), path)
}

// Parse reads the index of the MP4 data r of size bytes; name names it in
// errors.
func Parse(r io.ReaderAt, size int64, name string) (*File, error) {
	p := &parser{r: r, name: name}
	out := &File{Name: name, Size: size}
	var moov *box
	err := p.children(box{path: "", start: 0, body: 0, end: size}, func(b box) error {
		if b.typ == "moov" {
			if moov != nil {
				return p.fail(b, "a second moov box")
			}
			moov = &b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if moov == nil {
		return nil, &Error{File: name, Cause: "no moov box (not an MP4 file, or truncated before its index)"}
	}
	err = p.children(*moov, func(b box) error {
		switch b.typ {
		case "trak":
			t, err := p.track(b, len(out.Tracks))
			if err != nil {
				return err
			}
			out.Tracks = append(out.Tracks, t)
		case "mvex":
			return p.fail(b, "fragmented MP4 (movie fragments): its samples are indexed in moof boxes, which are not supported; remux it with ffmpeg -i IN -c copy OUT.mp4")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Truncated reports whether t's samples lie past the end of the file:
// the index is whole but the media data was cut.
func (f *File) Truncated(t *Track) bool { return t.DataEnd > f.Size }

// Video returns the file's video tracks, in file order.
func (f *File) Video() []*Track {
	var out []*Track
	for _, t := range f.Tracks {
		if t.Handler == "vide" {
			out = append(out, t)
		}
	}
	return out
}

// box is a box's place in the file: the header at start, the body from
// body to end.
type box struct {
	path             string
	typ              string
	start, body, end int64
}

type parser struct {
	r    io.ReaderAt
	name string
}

func (p *parser) fail(b box, format string, args ...any) error {
	return &Error{File: p.name, Box: b.path, Offset: b.start, Cause: fmt.Sprintf(format, args...)}
}

// children calls fn for each box inside parent's body, in order.
func (p *parser) children(parent box, fn func(box) error) error {
	seen := map[string]int{}
	for off := parent.body; off < parent.end; {
		b, err := p.header(parent, off, seen)
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
		off = b.end
	}
	return nil
}

// header reads the box header at off inside parent.
func (p *parser) header(parent box, off int64, seen map[string]int) (box, error) {
	here := box{path: parent.path, start: off}
	if here.path == "" {
		here.path = "(top level)"
	}
	if parent.end-off < 8 {
		return here, p.fail(here, "%d bytes left for a box header of 8: truncated", parent.end-off)
	}
	var h [16]byte
	if err := p.read(here, h[:8], off); err != nil {
		return here, err
	}
	size := int64(binary.BigEndian.Uint32(h[:4]))
	typ := fourCC(h[4:8])
	b := box{typ: typ, start: off, body: off + 8}
	b.path = typ
	if parent.path != "" {
		b.path = parent.path + "/" + typ
	}
	if n := seen[typ]; n > 0 || typ == "trak" {
		b.path = fmt.Sprintf("%s[%d]", b.path, n)
	}
	seen[typ]++
	switch size {
	case 0: // to the end of the enclosing box
		size = parent.end - off
	case 1: // 64-bit size after the type
		if parent.end-off < 16 {
			return b, p.fail(b, "64-bit box size truncated")
		}
		if err := p.read(b, h[8:16], off+8); err != nil {
			return b, err
		}
		u := binary.BigEndian.Uint64(h[8:16])
		if u > uint64(parent.end-off) {
			return b, p.fail(b, "size %d runs past the end of its parent (%d bytes left): truncated or corrupt", u, parent.end-off)
		}
		size = int64(u)
		b.body = off + 16
	}
	if size < b.body-off {
		return b, p.fail(b, "size %d is smaller than its header", size)
	}
	if size > parent.end-off {
		return b, p.fail(b, "size %d runs past the end of its parent (%d bytes left): truncated or corrupt", size, parent.end-off)
	}
	b.end = off + size
	return b, nil
}

// fourCC is a box type as text, with bytes outside printable ASCII escaped.
func fourCC(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%q", string(b))
		}
	}
	return string(b)
}

// read reads len(buf) bytes at off, for box b.
func (p *parser) read(b box, buf []byte, off int64) error {
	n, err := p.r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		return p.fail(b, "file ends at offset %d, inside the box: truncated", off+int64(n))
	}
	return p.fail(b, "read: %v", err)
}

// maxBody bounds a parsed box's body: the sample tables of a day of
// 120 fps video are far smaller.
const maxBody = 1 << 30

// body reads b's whole body.
func (p *parser) body(b box) ([]byte, error) {
	n := b.end - b.body
	if n > maxBody {
		return nil, p.fail(b, "body of %d bytes is larger than the %d this reader accepts", n, maxBody)
	}
	buf := make([]byte, n)
	if err := p.read(b, buf, b.body); err != nil {
		return nil, err
	}
	return buf, nil
}
