package loader

import (
	"math"

	"github.com/pipetop/pipetop/trainer/episodes"
)

// noUse is the next-use position of a frame no known sample needs.
const noUse int64 = math.MaxInt64

// epochUses lists, for every frame, the positions (within one epoch's
// sample order) of the samples whose observations need it: a CSR table,
// start[f]..start[f+1] indexing pos, each frame's positions ascending.
type epochUses struct {
	start []int32
	pos   []int32
}

func buildEpochUses(order []int32, idx *episodes.Index, nobs int, frames int64) *epochUses {
	u := &epochUses{start: make([]int32, frames+1), pos: make([]int32, len(order)*nobs)}
	for _, id := range order {
		w := idx.Windows[id]
		for j := range nobs {
			u.start[w.Frame(j)+1]++
		}
	}
	for f := int64(1); f <= frames; f++ {
		u.start[f] += u.start[f-1]
	}
	fill := make([]int32, frames)
	for k, id := range order {
		w := idx.Windows[id]
		for j := range nobs {
			f := w.Frame(j)
			u.pos[u.start[f]+fill[f]] = int32(k)
			fill[f]++
		}
	}
	return u
}

// uses answers "when is frame f next needed?" from the sample order, which
// depends only on the seed: the loader knows its future. It keeps the
// tables of the two or three epochs around the current position. Not safe
// for concurrent use (the loader calls it under its plan lock).
type uses struct {
	orders *orderCache
	idx    *episodes.Index
	nobs   int
	frames int64
	per    int64
	epochs map[int64]*epochUses
}

func (u *uses) epoch(e int64) *epochUses {
	if t, ok := u.epochs[e]; ok {
		return t
	}
	if u.epochs == nil {
		u.epochs = map[int64]*epochUses{}
	}
	for k := range u.epochs {
		if k < e-1 {
			delete(u.epochs, k)
		}
	}
	t := buildEpochUses(u.orders.get(e), u.idx, u.nobs, u.frames)
	u.epochs[e] = t
	return t
}

// next returns the first stream position >= p whose sample observes frame
// f, looking into this epoch and the next; noUse if neither needs it.
func (u *uses) next(f, p int64) int64 {
	e := p / u.per
	for ep := e; ep <= e+1; ep++ {
		t := u.epoch(ep)
		k0 := int32(0)
		if ep == e {
			k0 = int32(p - e*u.per)
		}
		for _, k := range t.pos[t.start[f]:t.start[f+1]] {
			if k >= k0 {
				return ep*u.per + int64(k)
			}
		}
	}
	return noUse
}
