package zarr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Store is a Zarr hierarchy in a local directory, version 2 or 3: which
// one is read from the store itself (a root zarr.json is v3).
type Store struct {
	root   string
	layout layout
}

// layout is what differs between the Zarr versions in a store: where the
// metadata documents live and what they say.
type layout interface {
	format() int
	// readArray reads and parses the metadata of the array at p.
	readArray(p string) (arrayInfo, error)
	// writeArray writes the metadata of a new array at p.
	writeArray(p string, spec ArraySpec) (arrayInfo, error)
	// writeGroup makes the group at p if it does not exist.
	writeGroup(p string) error
	arrays() ([]string, error)
	attrs(p string) (map[string]any, error)
	setAttrs(p string, attrs map[string]any) error
	consolidate() error
	consolidated() bool
}

// Open opens an existing store. Consolidated metadata is used when the
// store has it (.zmetadata in v2, as zarr.open_consolidated does; the root
// zarr.json's consolidated_metadata in v3); otherwise each array's
// metadata is read from disk.
func Open(root string) (*Store, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open zarr store: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open zarr store %s: not a directory", root)
	}
	data, err := os.ReadFile(filepath.Join(root, "zarr.json"))
	switch {
	case err == nil:
		l, err := openV3(root, data)
		if err != nil {
			return nil, fmt.Errorf("open zarr store %s: zarr.json: %w", root, err)
		}
		return &Store{root: root, layout: l}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open zarr store %s: %w", root, err)
	}
	l, err := openV2(root)
	if err != nil {
		return nil, err
	}
	return &Store{root: root, layout: l}, nil
}

// Create makes an empty Zarr v2 store (a root group) at root, which must
// not exist or be an empty directory.
func Create(root string) (*Store, error) { return CreateFormat(root, 2) }

// CreateFormat makes an empty store of Zarr version format (2 or 3) at
// root, which must not exist or be an empty directory.
func CreateFormat(root string, format int) (*Store, error) {
	s := &Store{root: root}
	switch format {
	case 2:
		s.layout = &layoutV2{root: root}
	case 3:
		s.layout = &layoutV3{root: root}
	default:
		return nil, fmt.Errorf("create zarr store %s: format %d: want 2 or 3", root, format)
	}
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
	if err := s.CreateGroup(""); err != nil {
		return nil, err
	}
	return s, nil
}

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

// Format is the store's Zarr version, 2 or 3.
func (s *Store) Format() int { return s.layout.format() }

// Consolidated reports whether metadata came from consolidated metadata.
func (s *Store) Consolidated() bool { return s.layout.consolidated() }

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
		if part == "." || part == ".." || strings.HasPrefix(part, ".z") || part == "zarr.json" {
			return "", fmt.Errorf("bad zarr path %q", p)
		}
	}
	return c, nil
}

// CreateGroup makes the group at p and every missing parent.
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
		if err := s.layout.writeGroup(cur); err != nil {
			return fmt.Errorf("create group %q: %w", cur, err)
		}
	}
	return nil
}

// Consolidate gathers the metadata of every group and array into one
// document (.zmetadata in v2, the root zarr.json in v3) and uses it for
// later lookups.
func (s *Store) Consolidate() error {
	if err := s.layout.consolidate(); err != nil {
		return fmt.Errorf("consolidate %s: %w", s.root, err)
	}
	return nil
}

// Arrays lists the paths of all arrays in the store, sorted.
func (s *Store) Arrays() ([]string, error) {
	out, err := s.layout.arrays()
	if err != nil {
		return nil, fmt.Errorf("list arrays in %s: %w", s.root, err)
	}
	return out, nil
}

// Attrs returns the attributes of a group or array (empty when absent).
func (s *Store) Attrs(p string) (map[string]any, error) {
	p, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	out, err := s.layout.attrs(p)
	if err != nil {
		return nil, fmt.Errorf("read attrs of %q: %w", p, err)
	}
	return out, nil
}

// SetAttrs writes the attributes of an existing group or array.
func (s *Store) SetAttrs(p string, attrs map[string]any) error {
	p, err := cleanPath(p)
	if err != nil {
		return err
	}
	if err := s.layout.setAttrs(p, attrs); err != nil {
		return fmt.Errorf("write attrs of %q: %w", p, err)
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

// nodeDir is the directory of the group or array at p.
func nodeDir(root, p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
