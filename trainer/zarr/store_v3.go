package zarr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// layoutV3 is a Zarr v3 store: a zarr.json per group and array, holding
// its attributes too. zarr-python 3 can also gather every document in
// the root zarr.json (consolidated_metadata); it is used when present and
// never required.
type layoutV3 struct {
	root string
	// meta maps paths ("data/camera0") to their zarr.json documents when
	// the root has consolidated metadata.
	meta map[string]json.RawMessage
}

func openV3(root string, rootDoc []byte) (*layoutV3, error) {
	_, members, err := nodeV3(rootDoc)
	if err != nil {
		return nil, err
	}
	l := &layoutV3{root: root}
	if cm, ok := members["consolidated_metadata"]; ok && string(cm) != "null" {
		if l.meta, err = parseConsolidatedV3(cm); err != nil {
			return nil, fmt.Errorf("consolidated_metadata: %w", err)
		}
	}
	return l, nil
}

// consolidatedV3 is zarr-python 3's consolidated_metadata member.
type consolidatedV3 struct {
	Kind           string                     `json:"kind"`
	MustUnderstand bool                       `json:"must_understand"`
	Metadata       map[string]json.RawMessage `json:"metadata"`
}

// parseConsolidatedV3 parses a root zarr.json's consolidated_metadata
// into its path → document map.
func parseConsolidatedV3(raw []byte) (map[string]json.RawMessage, error) {
	var c consolidatedV3
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if c.Kind != "inline" {
		return nil, fmt.Errorf("kind %q: want inline", c.Kind)
	}
	if c.Metadata == nil {
		return nil, fmt.Errorf("missing \"metadata\"")
	}
	return c.Metadata, nil
}

func (l *layoutV3) format() int        { return 3 }
func (l *layoutV3) consolidated() bool { return l.meta != nil }

func (l *layoutV3) file(p string) string { return filepath.Join(nodeDir(l.root, p), "zarr.json") }

// doc is the zarr.json of p, from the consolidated metadata when it has it.
func (l *layoutV3) doc(p string) ([]byte, error) {
	if d, ok := l.meta[p]; ok {
		return d, nil
	}
	return os.ReadFile(l.file(p))
}

func (l *layoutV3) readArray(p string) (arrayInfo, error) {
	data, err := l.doc(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return arrayInfo{}, fmt.Errorf("missing zarr.json in %s", l.root)
		}
		return arrayInfo{}, err
	}
	in, err := parseArrayV3(data)
	if err != nil {
		return in, fmt.Errorf("zarr.json: %w", err)
	}
	return in, nil
}

func (l *layoutV3) writeArray(p string, spec ArraySpec) (arrayInfo, error) {
	doc, err := spec.docV3()
	if err != nil {
		return arrayInfo{}, err
	}
	data, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		return arrayInfo{}, err
	}
	in, err := parseArrayV3(data)
	if err != nil {
		return in, err
	}
	if err := os.MkdirAll(nodeDir(l.root, p), 0o755); err != nil {
		return in, err
	}
	if err := os.WriteFile(l.file(p), data, 0o644); err != nil {
		return in, err
	}
	l.meta = nil // stale until the next Consolidate
	return in, nil
}

// docV3 is the zarr.json of the array spec describes.
func (spec ArraySpec) docV3() (map[string]any, error) {
	dt, err := ParseDType(spec.DType)
	if err != nil {
		return nil, err
	}
	fill := spec.FillValue
	if fill == nil {
		fill = 0
		if dt.Kind == Bool {
			fill = false
		}
	}
	fj, err := fillJSON(fill)
	if err != nil {
		return nil, err
	}
	endian := "little"
	if dt.BigEndian {
		endian = "big"
	}
	var codecs []any
	if spec.Order != nil {
		codecs = append(codecs, codecJSON("transpose", map[string]any{"order": spec.Order}))
	}
	codecs = append(codecs, codecJSON("bytes", map[string]any{"endian": endian}))
	if spec.Codec != nil {
		c, err := codecMetaV3(spec.Codec, dt.Size)
		if err != nil {
			return nil, err
		}
		codecs = append(codecs, c)
	}
	grid := spec.Chunks
	if spec.ShardShape != nil {
		grid = spec.ShardShape
		loc := "end"
		if spec.IndexAtStart {
			loc = "start"
		}
		codecs = []any{codecJSON("sharding_indexed", map[string]any{"chunk_shape": spec.Chunks, "codecs": codecs,
			"index_codecs":   []any{codecJSON("bytes", map[string]any{"endian": "little"}), map[string]any{"name": "crc32c"}},
			"index_location": loc})}
	}
	return map[string]any{
		"zarr_format": 3, "node_type": "array", "shape": spec.Shape, "data_type": dt.V3Name(),
		"chunk_grid":         codecJSON("regular", map[string]any{"chunk_shape": grid}),
		"chunk_key_encoding": codecJSON("default", map[string]any{"separator": "/"}),
		"fill_value":         fj, "codecs": codecs, "attributes": map[string]any{},
	}, nil
}

func (l *layoutV3) writeGroup(p string) error {
	if err := os.MkdirAll(nodeDir(l.root, p), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(l.file(p)); err == nil {
		return nil
	}
	return writeJSON(l.file(p), map[string]any{"zarr_format": 3, "node_type": "group", "attributes": map[string]any{}})
}

// walk calls fn for every group and array below the root, in path order,
// without descending into arrays (their chunk files can be many).
func (l *layoutV3) walk(p string, fn func(p, nodeType string, doc []byte) error) error {
	ents, err := os.ReadDir(nodeDir(l.root, p))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		child := path.Join(p, e.Name())
		data, err := os.ReadFile(l.file(child))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		var head struct {
			NodeType string `json:"node_type"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return fmt.Errorf("%s/zarr.json: %w", child, err)
		}
		if err := fn(child, head.NodeType, data); err != nil {
			return err
		}
		if head.NodeType == "group" {
			if err := l.walk(child, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// consolidate writes every group and array document into the root
// zarr.json's consolidated_metadata, as zarr-python 3 does.
func (l *layoutV3) consolidate() error {
	meta := map[string]json.RawMessage{}
	err := l.walk("", func(p, _ string, doc []byte) error {
		meta[p] = doc
		return nil
	})
	if err != nil {
		return err
	}
	root, err := l.members("")
	if err != nil {
		return err
	}
	c, err := json.Marshal(consolidatedV3{Kind: "inline", Metadata: meta})
	if err != nil {
		return err
	}
	root["consolidated_metadata"] = c
	if err := writeJSON(l.file(""), root); err != nil {
		return err
	}
	l.meta = meta
	return nil
}

// members reads the zarr.json of p from disk as its members.
func (l *layoutV3) members(p string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(l.file(p))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", l.file(p), err)
	}
	return m, nil
}

func (l *layoutV3) arrays() ([]string, error) {
	var out []string
	add := func(p, nodeType string, _ []byte) error {
		if nodeType == "array" {
			out = append(out, p)
		}
		return nil
	}
	if l.meta != nil {
		for p, doc := range l.meta {
			var head struct {
				NodeType string `json:"node_type"`
			}
			if err := json.Unmarshal(doc, &head); err != nil {
				return nil, fmt.Errorf("consolidated metadata of %q: %w", p, err)
			}
			_ = add(p, head.NodeType, nil)
		}
	} else if err := l.walk("", add); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

func (l *layoutV3) attrs(p string) (map[string]any, error) {
	data, err := l.doc(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Attributes map[string]any `json:"attributes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Attributes == nil {
		doc.Attributes = map[string]any{}
	}
	return doc.Attributes, nil
}

func (l *layoutV3) setAttrs(p string, attrs map[string]any) error {
	m, err := l.members(p)
	if err != nil {
		return err
	}
	if m["attributes"], err = json.Marshal(attrs); err != nil {
		return err
	}
	if err := writeJSON(l.file(p), m); err != nil {
		return err
	}
	if _, ok := l.meta[p]; ok {
		l.meta[p], err = json.Marshal(m)
	}
	return err
}
