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
	"strconv"
	"strings"
)

// layoutV2 is a Zarr v2 store: .zgroup, .zarray and .zattrs documents,
// optionally gathered in .zmetadata.
type layoutV2 struct {
	root string
	// meta maps keys such as "data/camera0/.zarray" to their documents
	// when the store was opened with a .zmetadata file.
	meta map[string]json.RawMessage
}

// consolidatedDoc is the layout of .zmetadata.
type consolidatedDoc struct {
	Metadata map[string]json.RawMessage `json:"metadata"`
	Format   int                        `json:"zarr_consolidated_format"`
}

func openV2(root string) (*layoutV2, error) {
	l := &layoutV2{root: root}
	data, err := os.ReadFile(filepath.Join(root, ".zmetadata"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("open zarr store %s: %w", root, err)
	}
	doc, err := ParseConsolidated(data)
	if err != nil {
		return nil, fmt.Errorf("open zarr store %s: .zmetadata: %w", root, err)
	}
	l.meta = doc
	return l, nil
}

// ParseConsolidated parses a .zmetadata document into its key → document map.
func ParseConsolidated(data []byte) (map[string]json.RawMessage, error) {
	var doc consolidatedDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if doc.Format != 1 {
		return nil, fmt.Errorf("zarr_consolidated_format %d: want 1", doc.Format)
	}
	if doc.Metadata == nil {
		return nil, fmt.Errorf("missing \"metadata\"")
	}
	return doc.Metadata, nil
}

func (l *layoutV2) format() int        { return 2 }
func (l *layoutV2) consolidated() bool { return l.meta != nil }

// readMeta returns the document at key from .zmetadata or from disk.
func (l *layoutV2) readMeta(key string) ([]byte, error) {
	if l.meta != nil {
		if d, ok := l.meta[key]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: %w (not in .zmetadata)", key, fs.ErrNotExist)
	}
	return os.ReadFile(filepath.Join(l.root, filepath.FromSlash(key)))
}

func (l *layoutV2) readArray(p string) (arrayInfo, error) {
	data, err := l.readMeta(path.Join(p, ".zarray"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return arrayInfo{}, fmt.Errorf("missing .zarray in %s", l.root)
		}
		return arrayInfo{}, err
	}
	m, err := ParseArrayMeta(data)
	if err != nil {
		return arrayInfo{}, fmt.Errorf(".zarray: %w", err)
	}
	return m.info()
}

func (l *layoutV2) writeArray(p string, spec ArraySpec) (arrayInfo, error) {
	if spec.ShardShape != nil || spec.Order != nil {
		return arrayInfo{}, fmt.Errorf("sharding and transposed chunks need a Zarr v3 store")
	}
	m, err := spec.metaV2()
	if err != nil {
		return arrayInfo{}, err
	}
	in, err := m.info()
	if err != nil {
		return in, err
	}
	dir := nodeDir(l.root, p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return in, err
	}
	doc := map[string]any{
		"zarr_format": 2, "shape": m.Shape, "chunks": m.Chunks, "dtype": spec.DType,
		"compressor": m.Compressor, "fill_value": m.FillValue, "order": "C", "filters": nil,
	}
	if spec.DimensionSeparator != "" {
		doc["dimension_separator"] = spec.DimensionSeparator
	}
	if err := writeJSON(filepath.Join(dir, ".zarray"), doc); err != nil {
		return in, err
	}
	l.meta = nil // stale until the next Consolidate
	return in, nil
}

func (spec ArraySpec) metaV2() (ArrayMeta, error) {
	m := ArrayMeta{ZarrFormat: 2, Shape: spec.Shape, Chunks: spec.Chunks, Order: "C",
		DimensionSeparator: spec.DimensionSeparator}
	var err error
	m.DType = []byte(strconv.Quote(spec.DType))
	if m.FillValue, err = fillJSON(spec.FillValue); err != nil {
		return m, err
	}
	m.Compressor = []byte("null")
	if spec.Codec != nil {
		if m.Compressor, err = jsonMarshal(spec.Codec.Config()); err != nil {
			return m, err
		}
	}
	return m, nil
}

func (l *layoutV2) writeGroup(p string) error {
	dir := nodeDir(l.root, p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	g := filepath.Join(dir, ".zgroup")
	if _, err := os.Stat(g); err == nil {
		return nil
	}
	return writeJSON(g, map[string]any{"zarr_format": 2})
}

// consolidate walks the store and writes .zmetadata holding every
// .zgroup, .zarray and .zattrs document.
func (l *layoutV2) consolidate() error {
	meta := map[string]json.RawMessage{}
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() || (name != ".zgroup" && name != ".zarray" && name != ".zattrs") {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			return fmt.Errorf("%s: invalid JSON", rel)
		}
		meta[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(l.root, ".zmetadata"), consolidatedDoc{Metadata: meta, Format: 1}); err != nil {
		return err
	}
	l.meta = meta
	return nil
}

func (l *layoutV2) arrays() ([]string, error) {
	var out []string
	if l.meta != nil {
		for k := range l.meta {
			if strings.HasSuffix(k, ".zarray") {
				out = append(out, strings.TrimSuffix(strings.TrimSuffix(k, ".zarray"), "/"))
			}
		}
	} else {
		err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == ".zarray" {
				rel, err := filepath.Rel(l.root, filepath.Dir(p))
				if err != nil {
					return err
				}
				if rel == "." {
					rel = ""
				}
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

func (l *layoutV2) attrs(p string) (map[string]any, error) {
	data, err := l.readMeta(path.Join(p, ".zattrs"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (l *layoutV2) setAttrs(p string, attrs map[string]any) error {
	return writeJSON(filepath.Join(nodeDir(l.root, p), ".zattrs"), attrs)
}
