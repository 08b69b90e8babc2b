package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// ArrayMeta is the JSON content of a Zarr v2 .zarray document.
type ArrayMeta struct {
	ZarrFormat         int             `json:"zarr_format"`
	Shape              []int           `json:"shape"`
	Chunks             []int           `json:"chunks"`
	DType              json.RawMessage `json:"dtype"`
	Compressor         json.RawMessage `json:"compressor"`
	FillValue          json.RawMessage `json:"fill_value"`
	Order              string          `json:"order"`
	Filters            json.RawMessage `json:"filters"`
	DimensionSeparator string          `json:"dimension_separator,omitempty"`
}

// arrayInfo is an array's metadata (v2 .zarray or v3 zarr.json) checked
// and parsed.
type arrayInfo struct {
	format int // 2 or 3
	shape  []int
	// chunks is the unit of reading: the inner chunk shape when sharded.
	chunks []int
	dtype  DType // with the stored byte order
	pipe   pipeline
	fill   []byte // one element, or nil for a null fill_value
	keys   keyEncoding
	shard  *shardLayout // nil unless sharded
}

// ParseArrayMeta parses and validates a .zarray document.
func ParseArrayMeta(data []byte) (ArrayMeta, error) {
	var m ArrayMeta
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&m); err != nil {
		return m, fmt.Errorf("bad JSON: %w", err)
	}
	_, err := m.info()
	return m, err
}

// maxChunkBytes bounds one chunk so a hostile .zarray cannot make a reader
// allocate without limit.
const maxChunkBytes = 1 << 31

func (m ArrayMeta) info() (arrayInfo, error) {
	var in arrayInfo
	if m.ZarrFormat != 2 {
		return in, fmt.Errorf("zarr_format %d: only version 2 is supported", m.ZarrFormat)
	}
	if len(m.Shape) != len(m.Chunks) {
		return in, fmt.Errorf("shape %v and chunks %v differ in rank", m.Shape, m.Chunks)
	}
	if len(m.Shape) > 32 {
		return in, fmt.Errorf("rank %d is too large", len(m.Shape))
	}
	var ds string
	if err := json.Unmarshal(m.DType, &ds); err != nil {
		return in, fmt.Errorf("dtype %s: only simple numeric dtypes are supported", string(m.DType))
	}
	dt, err := ParseDType(ds)
	if err != nil {
		return in, err
	}
	n := dt.Size
	for i := range m.Shape {
		if m.Shape[i] < 0 {
			return in, fmt.Errorf("shape %v: negative extent", m.Shape)
		}
		if m.Chunks[i] < 1 {
			return in, fmt.Errorf("chunks %v: every chunk extent must be >= 1", m.Chunks)
		}
		if n > maxChunkBytes/m.Chunks[i] {
			return in, fmt.Errorf("chunks %v: a chunk would exceed %d bytes", m.Chunks, maxChunkBytes)
		}
		n *= m.Chunks[i]
	}
	if m.Order != "C" {
		return in, fmt.Errorf("order %q: only C order is supported", m.Order)
	}
	if f := bytes.TrimSpace(m.Filters); len(f) > 0 && string(f) != "null" && string(f) != "[]" {
		return in, fmt.Errorf("filters %s: filters are not supported", string(f))
	}
	switch m.DimensionSeparator {
	case "":
		in.keys.sep = "."
	case ".", "/":
		in.keys.sep = m.DimensionSeparator
	default:
		return in, fmt.Errorf("dimension_separator %q: want \".\" or \"/\"", m.DimensionSeparator)
	}
	codec, err := ParseCodec(m.Compressor)
	if err != nil {
		return in, err
	}
	var bb []Codec
	if codec != nil {
		bb = []Codec{codec}
	}
	if in.pipe, err = newPipeline(m.Chunks, dt.Size, nil, bb); err != nil {
		return in, err
	}
	if in.fill, err = parseFill(m.FillValue, dt); err != nil {
		return in, err
	}
	in.format, in.shape, in.chunks, in.dtype = 2, m.Shape, m.Chunks, dt
	return in, nil
}

// parseFill encodes a JSON fill_value as one element of dt.
func parseFill(raw json.RawMessage, dt DType) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	out := make([]byte, dt.Size)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v, ok := map[string]float64{"NaN": math.NaN(), "Infinity": math.Inf(1), "-Infinity": math.Inf(-1)}[s]
		if !ok || dt.Kind != Float {
			return nil, fmt.Errorf("fill_value %q: not valid for dtype %s", s, dt)
		}
		return out, dt.encodeValue(out, v)
	}
	if string(raw) == "true" || string(raw) == "false" {
		if dt.Kind != Bool {
			return nil, fmt.Errorf("fill_value %s: not valid for dtype %s", raw, dt)
		}
		if raw[0] == 't' {
			out[0] = 1
		}
		return out, nil
	}
	txt := string(raw)
	bitsN := 8 * dt.Size
	if dt.Kind == Uint || dt.Kind == Bool {
		if u, err := strconv.ParseUint(txt, 10, bitsN); err == nil {
			putUint(out, dt.ByteOrder(), dt.Size, u)
			return out, nil
		}
	}
	if dt.Kind == Int {
		if i, err := strconv.ParseInt(txt, 10, bitsN); err == nil {
			putUint(out, dt.ByteOrder(), dt.Size, uint64(i))
			return out, nil
		}
	}
	if dt.Kind != Float {
		return nil, fmt.Errorf("fill_value %s: not an integer in range for dtype %s", raw, dt)
	}
	v, err := strconv.ParseFloat(txt, 64)
	if err != nil {
		return nil, fmt.Errorf("fill_value %s: not a number", raw)
	}
	if err := dt.encodeValue(out, v); err != nil {
		return nil, err
	}
	return out, nil
}

// fillJSON renders a Go fill value as zarr-python writes it.
func fillJSON(v any) (json.RawMessage, error) {
	switch f := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case float64:
		switch {
		case math.IsNaN(f):
			return json.RawMessage(`"NaN"`), nil
		case math.IsInf(f, 1):
			return json.RawMessage(`"Infinity"`), nil
		case math.IsInf(f, -1):
			return json.RawMessage(`"-Infinity"`), nil
		}
	case float32:
		return fillJSON(float64(f))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("fill_value %v: %w", v, err)
	}
	return b, nil
}
