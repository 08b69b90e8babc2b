package pystack

import (
	"errors"
	"testing"
)

// TestImageStacks reads a scene's two threads under each version's
// layout: frames, ids and the GIL holder.
func TestImageStacks(t *testing.T) {
	for minor := 10; minor <= 13; minor++ {
		im, _, want := scene(minor, 5)
		p := im.process()
		threads, err := p.Threads()
		if err != nil {
			t.Fatalf("3.%d: %v", minor, err)
		}
		if len(threads) != 2 {
			t.Fatalf("3.%d: %d threads", minor, len(threads))
		}
		main, spin := threads[0], threads[1]
		if !equalFrames(main.Frames, want) || main.ID != 0x1000 || main.HoldsGIL {
			t.Errorf("3.%d: main thread %+v, want frames %v", minor, main, want)
		}
		if len(spin.Frames) != 1 || spin.Frames[0] != (Frame{"spin", "scene.py", 99}) || !spin.HoldsGIL {
			t.Errorf("3.%d: spinning thread %+v", minor, spin)
		}
		if minor > 10 && (main.TID != 100 || spin.TID != 101) {
			t.Errorf("3.%d: tids %d, %d", minor, main.TID, spin.TID)
		}
		if p.Drops().Total() != 0 {
			t.Errorf("3.%d: drops %+v", minor, p.Drops())
		}
	}
}

// TestImageDrops breaks a scene the ways a read racing the interpreter
// finds it: the main thread's stack is dropped for the reason, counted,
// and the other thread is still read.
func TestImageDrops(t *testing.T) {
	cases := []struct {
		name   string
		depth  int
		minors []int
		breaks func(im *image, frames []uint64)
		want   DropReason
	}{
		{"cyclic chain", 4, nil, func(im *image, f []uint64) { im.put64(f[3], im.lay.frameBack, f[1]) }, DropCycle},
		{"frame past the memory", 4, nil, func(im *image, f []uint64) { im.put64(f[2], im.lay.frameBack, imageBase+1<<30) }, DropFault},
		{"frame in unmapped memory", 4, nil, func(im *image, f []uint64) { im.put64(f[0], im.lay.frameBack, 0x1000) }, DropFault},
		{"code that is a str", 3, nil, func(im *image, f []uint64) {
			im.put64(f[1], im.lay.frameCode, im.str("x"))
			im.alloc(pageSize) // the str is followed by memory, as on a heap
		}, DropRace},
		{"name that is not compact", 3, nil, func(im *image, f []uint64) {
			code := im.code("g", "scene.py", 1, 4)
			name := im.str("g")
			im.put32(name, im.lay.unicodeState, 1<<2|1<<6)
			im.put64(code, im.lay.codeName, name)
			im.put64(code, im.lay.codeQualname, name)
			im.put64(f[1], im.lay.frameCode, code)
		}, DropRace},
		{"file name too long", 3, nil, func(im *image, f []uint64) {
			code := im.code("g", "scene.py", 1, 4)
			file := im.str("scene.py")
			im.put64(file, im.lay.unicodeLength, maxString+1)
			im.put64(code, im.lay.codeFilename, file)
			im.put64(f[0], im.lay.frameCode, code)
		}, DropRace},
		{"instruction outside its code", 3, []int{11, 12, 13}, func(im *image, f []uint64) {
			im.put64(f[2], im.lay.frameInstr, 0x10)
		}, DropRace},
		{"deeper than MaxDepth", MaxDepth + 1, []int{11}, func(*image, []uint64) {}, DropDepth},
	}
	for _, c := range cases {
		minors := c.minors
		if minors == nil {
			minors = []int{10, 11, 12, 13}
		}
		for _, minor := range minors {
			im, frames, _ := scene(minor, c.depth)
			c.breaks(im, frames)
			p := im.process()
			threads, err := p.Threads()
			if err != nil {
				t.Fatalf("%s, 3.%d: %v", c.name, minor, err)
			}
			if threads[0].Dropped != c.want || threads[0].Frames != nil {
				t.Errorf("%s, 3.%d: main thread dropped %q with %d frames, want %q", c.name, minor, threads[0].Dropped, len(threads[0].Frames), c.want)
			}
			if threads[1].Dropped != "" || len(threads[1].Frames) != 1 {
				t.Errorf("%s, 3.%d: the other thread %+v", c.name, minor, threads[1])
			}
			if d := p.Drops(); d.Total() != 1 {
				t.Errorf("%s, 3.%d: drops %+v, want one", c.name, minor, d)
			}
		}
	}
}

// TestImageListChanged: a thread list that loops, or leads out of the
// memory, drops the whole read.
func TestImageListChanged(t *testing.T) {
	breaks := map[string]func(im *image, first uint64){
		"loop":       func(im *image, first uint64) { im.put64(first, im.lay.threadNext, first) },
		"past":       func(im *image, first uint64) { im.put64(first, im.lay.threadNext, imageBase+1<<30) },
		"no runtime": func(im *image, _ uint64) { im.data = nil },
	}
	for name, brk := range breaks {
		im, _, _ := scene(12, 2)
		rt := uint64(imageBase + imgRuntime)
		interp := le64(im.at(rt, im.lay.interpHead), 0)
		first := le64(im.at(interp, im.lay.interpThreads), 0)
		brk(im, first)
		p := im.process()
		if _, err := p.Threads(); !errors.Is(err, ErrListChanged) || p.Drops().List != 1 {
			t.Errorf("%s: error %v, drops %+v", name, err, p.Drops())
		}
	}
}

// TestImageWrongVersion reads each version's scene with every other
// version's layout: never a panic, never the scene's frames.
func TestImageWrongVersion(t *testing.T) {
	for built := 10; built <= 13; built++ {
		for read := 10; read <= 13; read++ {
			if read == built {
				continue
			}
			im, _, want := scene(built, 3)
			im.lay = layouts[read]
			threads, err := im.process().Threads()
			if err == nil && len(threads) > 0 && equalFrames(threads[0].Frames, want) {
				t.Errorf("3.%d's image read as 3.%d gave its frames", built, read)
			}
		}
	}
}

// TestImageFrameBudget: a read walks at most maxPassFrames frames; the
// stacks past them are dropped, the ones before read whole.
func TestImageFrameBudget(t *testing.T) {
	const depth, threads = 2000, maxPassFrames/2000 + 1
	im := newImage(11)
	code := im.code("deep", "deep.py", 1, 16)
	head := uint64(0)
	for i := 0; i < threads; i++ {
		top := uint64(0)
		for range depth {
			top = im.frame(code, 2, top)
		}
		head = im.thread(uint64(0x1000+i), 100+i, top, head)
	}
	im.interp(head, 0)
	p := im.process()
	got, err := p.Threads()
	if err != nil {
		t.Fatal(err)
	}
	for i, th := range got {
		read := i < maxPassFrames/depth
		if read && (th.Dropped != "" || len(th.Frames) != depth) || !read && th.Dropped != DropDepth {
			t.Errorf("thread %d of %d: %d frames, dropped %q", i, len(got), len(th.Frames), th.Dropped)
		}
	}
}
