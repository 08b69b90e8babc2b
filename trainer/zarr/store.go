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
	"strings"
)

// Store is a Zarr v2 hierarchy in a local directory.
type Store struct {
	root string
	// consolidated maps keys such as "data/camera0/.zarray" to their
	// documents when the store was opened with a .zmetadata file.
	consolidated map[string]json.RawMessage
}

// consolidatedDoc is the layout of .zmetadata.
type consolidatedDoc struct {
	Metadata map[string]json.RawMessage `json:"metadata"`
	Format   int                        `json:"zarr_consolidated_format"`
}

// Open opens an existing store. When root holds a .zmetadata file its
// metadata is used (as zarr.open_consolidated does); otherwise each .zarray
// is read from disk.
func Open(root string) (*Store, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open zarr store: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open zarr store %s: not a directory", root)
	}
	s := &Store{root: root}
	data, err := os.ReadFile(filepath.Join(root, ".zmetadata"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("open zarr store %s: %w", root, err)
	}
	doc, err := ParseConsolidated(data)
	if err != nil {
		return nil, fmt.Errorf("open zarr store %s: .zmetadata: %w", root, err)
	}
	s.consolidated = doc
	return s, nil
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

// Create makes an empty store (a root group) at root, which must not exist
// or be an empty directory.
func Create(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create zarr store: %w", err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("create zarr store: %w", err)
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("create zarr store %s: directory is not empty", root)
	}
	s := &Store{root: root}
	if err := s.CreateGroup(""); err != nil {
		return nil, err
	}
	return s, nil
}

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

// Consolidated reports whether metadata came from .zmetadata.
func (s *Store) Consolidated() bool { return s.consolidated != nil }

// cleanPath normalises an array or group path ("a/b", no leading slash).
func cleanPath(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	c := path.Clean(p)
	if c != p || strings.HasPrefix(c, "..") || strings.Contains(p, "\\") {
		return "", fmt.Errorf("bad zarr path %q", p)
	}
	for _, part := range strings.Split(c, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, ".z") {
			return "", fmt.Errorf("bad zarr path %q", p)
		}
	}
	return c, nil
}

// readMeta returns the document at key from .zmetadata or from disk.
func (s *Store) readMeta(key string) ([]byte, error) {
	if s.consolidated != nil {
		if d, ok := s.consolidated[key]; ok {
			return d, nil
		}
		return nil, fmt.Errorf("%s: %w (not in .zmetadata)", key, fs.ErrNotExist)
	}
	return os.ReadFile(filepath.Join(s.root, filepath.FromSlash(key)))
}

// CreateGroup writes a .zgroup at p and at every missing parent.
func (s *Store) CreateGroup(p string) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	parts := []string{""}
	if p != "" {
		parts = append(parts, strings.Split(p, "/")...)
	}
	cur := ""
	for _, part := range parts {
		cur = path.Join(cur, part)
		dir := filepath.Join(s.root, filepath.FromSlash(cur))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create group %q: %w", cur, err)
		}
		g := filepath.Join(dir, ".zgroup")
		if _, err := os.Stat(g); err == nil {
			continue
		}
		if err := writeJSON(g, map[string]any{"zarr_format": 2}); err != nil {
			return fmt.Errorf("create group %q: %w", cur, err)
		}
	}
	return nil
}

// writeJSON writes v as zarr-python does: sorted keys, 4-space indent.
func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// Consolidate walks the store and writes .zmetadata holding every .zgroup,
// .zarray and .zattrs document, then uses it for later lookups.
func (s *Store) Consolidate() error {
	meta := map[string]json.RawMessage{}
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() || (name != ".zgroup" && name != ".zarray" && name != ".zattrs") {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
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
		return fmt.Errorf("consolidate %s: %w", s.root, err)
	}
	if err := writeJSON(filepath.Join(s.root, ".zmetadata"), consolidatedDoc{Metadata: meta, Format: 1}); err != nil {
		return fmt.Errorf("consolidate %s: %w", s.root, err)
	}
	s.consolidated = meta
	return nil
}

// Arrays lists the paths of all arrays in the store, sorted.
func (s *Store) Arrays() ([]string, error) {
	var out []string
	if s.consolidated != nil {
		for k := range s.consolidated {
			if strings.HasSuffix(k, ".zarray") {
				out = append(out, strings.TrimSuffix(strings.TrimSuffix(k, ".zarray"), "/"))
			}
		}
	} else {
		err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == ".zarray" {
				rel, err := filepath.Rel(s.root, filepath.Dir(p))
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
			return nil, fmt.Errorf("list arrays in %s: %w", s.root, err)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Attrs returns the .zattrs of a group or array (empty when absent).
func (s *Store) Attrs(p string) (map[string]any, error) {
	p, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	data, err := s.readMeta(path.Join(p, ".zattrs"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read attrs of %q: %w", p, err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("read attrs of %q: %w", p, err)
	}
	return out, nil
}

// SetAttrs writes the .zattrs of an existing group or array.
func (s *Store) SetAttrs(p string, attrs map[string]any) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	f := filepath.Join(s.root, filepath.FromSlash(p), ".zattrs")
	if err := writeJSON(f, attrs); err != nil {
		return fmt.Errorf("write attrs of %q: %w", p, err)
	}
	return nil
}
