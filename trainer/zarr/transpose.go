package zarr

import "fmt"

// parseOrder checks a transpose permutation for an array of the given rank.
func parseOrder(order []int, rank int) error {
	if len(order) != rank {
		return fmt.Errorf("transpose: order %v has %d axes, the array has %d", order, len(order), rank)
	}
	seen := make([]bool, rank)
	for _, o := range order {
		if o < 0 || o >= rank || seen[o] {
			return fmt.Errorf("transpose: order %v is not a permutation of 0..%d", order, rank-1)
		}
		seen[o] = true
	}
	return nil
}

// composeOrders is the single permutation equal to applying a, then b.
func composeOrders(a, b []int) []int {
	if a == nil {
		return b
	}
	out := make([]int, len(b))
	for i, o := range b {
		out[i] = a[o]
	}
	return out
}

// permuted is shape with its axes in order: out[i] = shape[order[i]].
func permuted(shape, order []int) []int {
	out := make([]int, len(order))
	for i, o := range order {
		out[i] = shape[o]
	}
	return out
}

// inversePerm is the permutation that undoes order.
func inversePerm(order []int) []int {
	out := make([]int, len(order))
	for i, o := range order {
		out[o] = i
	}
	return out
}

// permute writes into dst the C-ordered array src of shape srcShape with
// its axes permuted by order: dst has shape permuted(srcShape, order) and
// dst[i_0, ..., i_n] = src[j] where j[order[k]] = i_k, as numpy's
// transpose(order) does. Elements are itemSize bytes.
func permute(dst, src []byte, srcShape, order []int, itemSize int) {
	n := len(order)
	if n == 0 {
		copy(dst, src)
		return
	}
	stride := make([]int, n)
	s := itemSize
	for i := n - 1; i >= 0; i-- {
		stride[i] = s
		s *= srcShape[i]
	}
	if s == 0 {
		return
	}
	dshape := permuted(srcShape, order)
	step := permuted(stride, order) // source stride of each destination axis
	idx := make([]int, n)
	so := 0
	for do := 0; do < len(dst); do += itemSize {
		copy(dst[do:do+itemSize], src[so:so+itemSize])
		for k := n - 1; k >= 0; k-- {
			idx[k]++
			so += step[k]
			if idx[k] < dshape[k] {
				break
			}
			so -= idx[k] * step[k]
			idx[k] = 0
		}
	}
}
