package importer

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pipetop/pipetop/trainer/hdf5"
)

// h5rows reads a column from HDF5 datasets: ds[i][e] is part i of
// episode e. A camera column has one uint8 part, copied as is; a float
// column has number parts whose columns are concatenated and converted
// to little-endian float32.
type h5rows struct {
	ds      [][]*hdf5.Dataset
	float   bool
	ep, row int    // the next row: episode and row in it
	scratch []byte // one part's native rows
}

func (h *h5rows) rowBytes() int64 {
	if !h.float {
		return h.ds[0][0].RowBytes()
	}
	var n int64
	for _, part := range h.ds {
		n += 4 * int64(width(part[0]))
	}
	return n
}

func (h *h5rows) read(dst []byte) error {
	rb := h.rowBytes()
	for len(dst) > 0 {
		if h.ep >= len(h.ds[0]) {
			return fmt.Errorf("import: %s ran out of rows", h.ds[0][0].Path)
		}
		left := h.ds[0][h.ep].Shape[0] - h.row
		if left == 0 {
			h.ep, h.row = h.ep+1, 0
			continue
		}
		m := min(left, int(int64(len(dst))/rb))
		if err := h.readEpisode(dst[:int64(m)*rb], m, rb); err != nil {
			return err
		}
		h.row += m
		dst = dst[int64(m)*rb:]
	}
	return nil
}

// readEpisode reads m rows of the current episode into dst.
func (h *h5rows) readEpisode(dst []byte, m int, rb int64) error {
	if !h.float {
		return h.ds[0][h.ep].ReadRows(h.row, m, dst)
	}
	col := 0
	for _, part := range h.ds {
		d := part[h.ep]
		need := int64(m) * d.RowBytes()
		if int64(cap(h.scratch)) < need {
			h.scratch = make([]byte, need)
		}
		s := h.scratch[:need]
		if err := d.ReadRows(h.row, m, s); err != nil {
			return err
		}
		w, size := width(d), d.DType.Size
		for r := 0; r < m; r++ {
			for c := 0; c < w; c++ {
				v := float32(number(s[(r*w+c)*size:], d.DType))
				binary.LittleEndian.PutUint32(dst[int64(r)*rb+int64(4*(col+c)):], math.Float32bits(v))
			}
		}
		col += w
	}
	return nil
}

func (h *h5rows) finish() error { return nil }

// number decodes one element in the machine's byte order.
func number(b []byte, t hdf5.DType) float64 {
	o := binary.NativeEndian
	switch {
	case t.Kind == hdf5.Float && t.Size == 4:
		return float64(math.Float32frombits(o.Uint32(b)))
	case t.Kind == hdf5.Float && t.Size == 8:
		return math.Float64frombits(o.Uint64(b))
	case t.Kind == hdf5.Uint && t.Size == 1:
		return float64(b[0])
	case t.Kind == hdf5.Uint && t.Size == 2:
		return float64(o.Uint16(b))
	case t.Kind == hdf5.Uint && t.Size == 4:
		return float64(o.Uint32(b))
	case t.Kind == hdf5.Uint && t.Size == 8:
		return float64(o.Uint64(b))
	case t.Kind == hdf5.Int && t.Size == 1:
		return float64(int8(b[0]))
	case t.Kind == hdf5.Int && t.Size == 2:
		return float64(int16(o.Uint16(b)))
	case t.Kind == hdf5.Int && t.Size == 4:
		return float64(int32(o.Uint32(b)))
	case t.Kind == hdf5.Int && t.Size == 8:
		return float64(int64(o.Uint64(b)))
	}
	return math.NaN()
}
