package pystack

import (
	"errors"
	"testing"
)

// FuzzWalk reads garbage memory as a runtime of the version v picks: the
// seeds are each version's scene, whole, with a cyclic frame chain, with
// a frame cut off, and read with another version's layout. Whatever the
// bytes: no panic, every dropped stack counted once, no negative line.
func FuzzWalk(f *testing.F) {
	for minor := 10; minor <= 13; minor++ {
		im, frames, _ := scene(minor, 4)
		f.Add(append([]byte(nil), im.data...), byte(minor))
		f.Add(append([]byte(nil), im.data...), byte(minor+1))
		im.put64(frames[3], im.lay.frameBack, frames[0])
		f.Add(append([]byte(nil), im.data...), byte(minor))
		f.Add(im.data[:frames[2]-imageBase+8], byte(minor))
	}
	f.Fuzz(func(t *testing.T, data []byte, v byte) {
		minor := 10 + int(v%4)
		p := newProcess(imageMem(data), layouts[minor], imageBase+imgRuntime, imageTypes)
		threads, err := p.Threads()
		d := p.Drops()
		if err != nil {
			if !errors.Is(err, ErrListChanged) || d.List != 1 || d.Total() != 1 {
				t.Fatalf("error %v with drops %+v", err, d)
			}
			return
		}
		dropped := uint64(0)
		for _, th := range threads {
			if th.Dropped != "" {
				dropped++
				if th.Frames != nil {
					t.Fatalf("a dropped stack with frames: %+v", th)
				}
			}
			for _, fr := range th.Frames {
				if fr.Line < 0 {
					t.Fatalf("frame %+v", fr)
				}
			}
		}
		if dropped != d.Total() {
			t.Fatalf("%d stacks dropped, %+v counted", dropped, d)
		}
	})
}

// FuzzLineTable decodes garbage line tables of both formats at any
// offset: no panic, no negative line.
func FuzzLineTable(f *testing.F) {
	f.Add([]byte{8, 1, 0, 3, 4, 0x80}, 5, 6, true)
	f.Add([]byte{0x80 | 14<<3, 3, 0, 1, 1, 0x80 | 13<<3 | 7, 0x41, 0x41}, 1, 3, false)
	f.Add([]byte{0xff, 0x80 | 12<<3 | 3, 1, 2}, 100, 2, false)
	f.Fuzz(func(t *testing.T, table []byte, first, at int, v310 bool) {
		line := line311(table, first, at)
		if v310 {
			line = line310(table, first, at)
		}
		if line < 0 {
			t.Fatalf("line %d", line)
		}
	})
}
