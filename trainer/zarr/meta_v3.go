package zarr

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// arrayDocV3 is the JSON content of a Zarr v3 array's zarr.json.
type arrayDocV3 struct {
	ZarrFormat          int               `json:"zarr_format"`
	NodeType            string            `json:"node_type"`
	Shape               []int             `json:"shape"`
	DataType            json.RawMessage   `json:"data_type"`
	ChunkGrid           codecMeta         `json:"chunk_grid"`
	ChunkKeyEncoding    *codecMeta        `json:"chunk_key_encoding"`
	FillValue           json.RawMessage   `json:"fill_value"`
	Codecs              []codecMeta       `json:"codecs"`
	StorageTransformers []json.RawMessage `json:"storage_transformers"`
}

// knownV3 are the zarr.json members this package reads or may ignore.
var knownV3 = map[string]bool{
	"zarr_format": true, "node_type": true, "shape": true, "data_type": true, "chunk_grid": true,
	"chunk_key_encoding": true, "fill_value": true, "codecs": true, "attributes": true,
	"storage_transformers": true, "dimension_names": true, "consolidated_metadata": true,
}

// nodeV3 reads the members every zarr.json has and checks its extensions:
// a member this package does not know may only be ignored when it is an
// object saying "must_understand": false.
func nodeV3(data []byte) (nodeType string, members map[string]json.RawMessage, err error) {
	if err := json.Unmarshal(data, &members); err != nil {
		return "", nil, fmt.Errorf("bad JSON: %w", err)
	}
	var head struct {
		ZarrFormat int    `json:"zarr_format"`
		NodeType   string `json:"node_type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", nil, fmt.Errorf("bad JSON: %w", err)
	}
	if head.ZarrFormat != 3 {
		return "", nil, fmt.Errorf("zarr_format %d: want 3", head.ZarrFormat)
	}
	for k, v := range members {
		if knownV3[k] || string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var ext struct {
			MustUnderstand *bool `json:"must_understand"`
		}
		if json.Unmarshal(v, &ext) != nil || ext.MustUnderstand == nil || *ext.MustUnderstand {
			return "", nil, fmt.Errorf("extension %q is not supported (only members with \"must_understand\": false may be ignored)", k)
		}
	}
	if head.NodeType != "array" && head.NodeType != "group" {
		return "", nil, fmt.Errorf("node_type %q: want array or group", head.NodeType)
	}
	return head.NodeType, members, nil
}

// parseArrayV3 parses and validates an array's zarr.json.
func parseArrayV3(data []byte) (arrayInfo, error) {
	var in arrayInfo
	kind, _, err := nodeV3(data)
	if err != nil {
		return in, err
	}
	if kind != "array" {
		return in, fmt.Errorf("node_type %q: not an array", kind)
	}
	var m arrayDocV3
	if err := json.Unmarshal(data, &m); err != nil {
		return in, fmt.Errorf("bad JSON: %w", err)
	}
	if len(m.StorageTransformers) > 0 {
		return in, fmt.Errorf("storage_transformers are not supported")
	}
	var name string
	if err := json.Unmarshal(m.DataType, &name); err != nil {
		return in, fmt.Errorf("data_type %s: only the numeric core data types are supported", m.DataType)
	}
	dt, err := parseDataTypeV3(name)
	if err != nil {
		return in, err
	}
	grid, err := regularGrid(m.ChunkGrid, m.Shape)
	if err != nil {
		return in, err
	}
	if in.keys, err = parseKeyEncodingV3(m.ChunkKeyEncoding); err != nil {
		return in, err
	}
	c, err := parseChain(m.Codecs, grid, dt, true)
	if err != nil {
		return in, err
	}
	in.format, in.shape, in.chunks, in.dtype, in.pipe, in.shard = 3, m.Shape, c.chunks, c.dtype, c.pipe, c.shard
	if in.fill, err = parseFillV3(m.FillValue, in.dtype); err != nil {
		return in, err
	}
	return in, nil
}

// regularGrid reads a "regular" chunk_grid and checks it against shape.
func regularGrid(g codecMeta, shape []int) ([]int, error) {
	if g.Name != "regular" {
		return nil, fmt.Errorf("chunk_grid %q is not supported (want regular)", g.Name)
	}
	var cfg struct {
		ChunkShape []int `json:"chunk_shape"`
	}
	if err := g.config(&cfg); err != nil {
		return nil, err
	}
	if len(shape) > 32 {
		return nil, fmt.Errorf("rank %d is too large", len(shape))
	}
	if len(cfg.ChunkShape) != len(shape) {
		return nil, fmt.Errorf("shape %v and chunk_shape %v differ in rank", shape, cfg.ChunkShape)
	}
	for i, s := range shape {
		if s < 0 {
			return nil, fmt.Errorf("shape %v: negative extent", shape)
		}
		if cfg.ChunkShape[i] < 1 {
			return nil, fmt.Errorf("chunk_shape %v: every extent must be >= 1", cfg.ChunkShape)
		}
	}
	return cfg.ChunkShape, nil
}

// checkChunkSize bounds the decoded size of one chunk or shard so that
// hostile metadata cannot make a reader allocate without limit.
func checkChunkSize(what string, shape []int, itemSize int) error {
	n := itemSize
	for _, c := range shape {
		if n > maxChunkBytes/c {
			return fmt.Errorf("%s %v: one would exceed %d bytes", what, shape, maxChunkBytes)
		}
		n *= c
	}
	return nil
}

// parseFillV3 encodes a v3 fill_value as one element of dt (stored byte
// order). Floats may also be given as "0x" and the hex digits of their
// big-endian bytes.
func parseFillV3(raw json.RawMessage, dt DType) ([]byte, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil || !strings.HasPrefix(s, "0x") {
		return parseFill(raw, dt)
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil || len(b) != dt.Size || dt.Kind != Float {
		return nil, fmt.Errorf("fill_value %q: not %d hex bytes of a float of dtype %s", s, dt.Size, dt)
	}
	if !dt.BigEndian {
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
	}
	return b, nil
}

// chain is a parsed v3 codecs list: the chunk (inner chunk, when sharded)
// shape, its pipeline, the dtype with the byte order the bytes codec
// sets, and the shard layout when the codec is sharding_indexed.
type chain struct {
	chunks []int
	dtype  DType
	pipe   pipeline
	shard  *shardLayout
}

// parseChain parses a codecs list for chunks of the given shape:
// array-to-array codecs (transpose), one array-to-bytes codec (bytes, or
// sharding_indexed when sharding is allowed, alone), then bytes-to-bytes
// codecs (at most one compressor, and crc32c).
func parseChain(list []codecMeta, chunks []int, dt DType, allowShard bool) (chain, error) {
	c := chain{chunks: chunks, dtype: dt}
	var order []int
	i := 0
	for ; i < len(list) && list[i].Name == "transpose"; i++ {
		o, err := transposeOrder(list[i], len(chunks))
		if err != nil {
			return c, err
		}
		order = composeOrders(order, o)
	}
	if i == len(list) {
		return c, fmt.Errorf("codecs: no array-to-bytes codec (bytes or sharding_indexed)")
	}
	ab := list[i]
	rest := list[i+1:]
	switch ab.Name {
	case "sharding_indexed":
		if !allowShard {
			return c, fmt.Errorf("codecs: sharding_indexed inside a shard is not supported")
		}
		if len(list) != 1 {
			return c, fmt.Errorf("codecs: sharding_indexed with other codecs around it is not supported")
		}
		return parseSharding(ab, chunks, dt)
	case "bytes":
		big, err := bytesEndian(ab, dt)
		if err != nil {
			return c, err
		}
		c.dtype.BigEndian = big
	default:
		if _, err := bytesCodecV3(ab); err != nil {
			return c, err
		}
		return c, fmt.Errorf("codecs: %s comes before an array-to-bytes codec (bytes or sharding_indexed)", ab.Name)
	}
	if err := checkChunkSize("chunk_shape", chunks, dt.Size); err != nil {
		return c, err
	}
	var bb []Codec
	for _, m := range rest {
		codec, err := bytesCodecV3(m)
		if err != nil {
			if m.Name == "transpose" || m.Name == "bytes" || m.Name == "sharding_indexed" {
				return c, fmt.Errorf("codecs: %s after the array-to-bytes codec", m.Name)
			}
			return c, err
		}
		bb = append(bb, codec)
	}
	var err error
	c.pipe, err = newPipeline(chunks, dt.Size, order, bb)
	return c, err
}

// transposeOrder reads a transpose codec's order: a permutation, or the
// older "C" and "F".
func transposeOrder(m codecMeta, rank int) ([]int, error) {
	var cfg struct {
		Order json.RawMessage `json:"order"`
	}
	if err := m.config(&cfg); err != nil {
		return nil, err
	}
	var name string
	if json.Unmarshal(cfg.Order, &name) == nil {
		order := make([]int, rank)
		for i := range order {
			order[i] = i
			if name == "F" {
				order[i] = rank - 1 - i
			}
		}
		if name != "C" && name != "F" {
			return nil, fmt.Errorf("transpose: order %q: want a permutation", name)
		}
		return order, nil
	}
	var order []int
	if err := json.Unmarshal(cfg.Order, &order); err != nil {
		return nil, fmt.Errorf("transpose: order %s: want a permutation", cfg.Order)
	}
	return order, parseOrder(order, rank)
}

// bytesEndian reads the bytes codec's endian: required for multi-byte types.
func bytesEndian(m codecMeta, dt DType) (big bool, err error) {
	var cfg struct {
		Endian string `json:"endian"`
	}
	if err := m.config(&cfg); err != nil {
		return false, err
	}
	switch cfg.Endian {
	case "little":
		return false, nil
	case "big":
		return dt.Size > 1, nil
	case "":
		if dt.Size == 1 {
			return false, nil
		}
		return false, fmt.Errorf("bytes: no endian for %d-byte elements", dt.Size)
	}
	return false, fmt.Errorf("bytes: endian %q: want little or big", cfg.Endian)
}
