// Package pypublish ships the Python publisher and the automatic PyTorch
// instrumentation (the pipetop_publish package beside this file) inside the
// Go binary, so that `pipetop run` works from a single copied executable.
//
// Unpack writes the files once per content hash under a per-user cache
// directory; Env gives the environment that switches the instrumentation on
// in every Python process started with it.
package pypublish

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

//go:generate go run ./internal/genstages

//go:embed pipetop_publish/*.py pipetop_publish/_boot/*.py
var files embed.FS

// Package is the name of the embedded Python package.
const Package = "pipetop_publish"

// Hash is a short content hash of every embedded file (names and bytes).
func Hash() string {
	h := sha256.New()
	for _, name := range names() {
		b, _ := files.ReadFile(name)
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// names lists the embedded files, sorted.
func names() []string {
	var out []string
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// CacheRoot is the per-user directory the files are unpacked under:
// $PIPETOP_CACHE_DIR, else the user cache directory (XDG_CACHE_HOME or
// ~/.cache) + /pipetop/python.
func CacheRoot() (string, error) {
	if d := os.Getenv("PIPETOP_CACHE_DIR"); d != "" {
		return filepath.Join(d, "python"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory for the Python publisher (set PIPETOP_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "pipetop", "python"), nil
}

// Unpack makes sure root/HASH holds the embedded files and returns that
// directory. A complete copy is never rewritten; a new one is written to a
// temporary directory beside it and renamed into place, so concurrent runs
// and interrupted ones never see a partial tree.
func Unpack(root string) (string, error) {
	dir := filepath.Join(root, Hash())
	if _, err := os.Stat(filepath.Join(dir, Package, "__init__.py")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("unpack the Python publisher: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".unpack-")
	if err != nil {
		return "", fmt.Errorf("unpack the Python publisher: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range names() {
		if err := writeFile(tmp, name); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("unpack the Python publisher: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another run may have won the race with the same content.
		if _, statErr := os.Stat(filepath.Join(dir, Package, "__init__.py")); statErr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("unpack the Python publisher into %s: %w", dir, err)
	}
	return dir, nil
}

// writeFile copies one embedded file under dir, synced to disk.
func writeFile(dir, name string) error {
	b, err := files.ReadFile(name)
	if err != nil {
		return fmt.Errorf("read embedded %s: %w", name, err)
	}
	dst := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	return nil
}

// BootDir is the directory, under an unpacked tree, whose sitecustomize.py
// switches the instrumentation on.
func BootDir(dir string) string { return filepath.Join(dir, Package, "_boot") }

// Env returns environ with the unpacked tree dir on PYTHONPATH (bootstrap
// first) and the given variables set (KEY=VALUE, replacing earlier ones).
func Env(environ []string, dir string, set ...string) ([]string, error) {
	if dir == "" {
		return nil, errors.New("no unpacked publisher directory")
	}
	path := []string{BootDir(dir), dir}
	vars := map[string]string{}
	var order []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := vars[k]; !seen {
			order = append(order, k)
		}
		vars[k] = v
	}
	if old := vars["PYTHONPATH"]; old != "" {
		path = append(path, old)
	}
	set = append([]string{"PYTHONPATH=" + strings.Join(path, string(os.PathListSeparator))}, set...)
	for _, kv := range set {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := vars[k]; !seen {
			order = append(order, k)
		}
		vars[k] = v
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out, nil
}
