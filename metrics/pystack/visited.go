package pystack

import "slices"

// visited is the addresses of a list or chain being walked, to find one
// that comes back: a scan of the few first, a set past linearChain.
type visited struct {
	addrs []uint64
	set   map[uint64]struct{}
}

// linearChain is how long a walk is checked by scanning its addresses.
const linearChain = 64

func (v *visited) reset() { v.addrs = v.addrs[:0] }

func (v *visited) len() int { return len(v.addrs) }

// add notes addr; false when the walk passed it already.
func (v *visited) add(addr uint64) bool {
	switch n := len(v.addrs); {
	case n < linearChain:
		if slices.Contains(v.addrs, addr) {
			return false
		}
	default:
		if n == linearChain {
			if v.set == nil {
				v.set = make(map[uint64]struct{})
			}
			clear(v.set)
			for _, a := range v.addrs {
				v.set[a] = struct{}{}
			}
		}
		if _, ok := v.set[addr]; ok {
			return false
		}
		v.set[addr] = struct{}{}
	}
	v.addrs = append(v.addrs, addr)
	return true
}
