package trainer

import (
	"fmt"
	"os"
	"path/filepath"
)

// Checkpoint file names inside a checkpoint directory.
const (
	LatestCheckpoint   = "latest.ckpt"
	PreviousCheckpoint = "previous.ckpt"
)

// WriteCheckpoint writes a checkpoint into dir atomically: write writes the
// file at the temporary path it is given; the file is then fsynced and
// renamed over dir/latest.ckpt, and the directory is fsynced. The checkpoint
// it replaces is kept as dir/previous.ckpt. A failure at any point leaves
// the existing checkpoints as they were.
func WriteCheckpoint(dir string, write func(tmpPath string) error) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create checkpoint dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".ckpt-*.tmp")
	if err != nil {
		return "", fmt.Errorf("create checkpoint temp file: %w", err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp) // no-op after the rename
	if err := write(tmp); err != nil {
		return "", fmt.Errorf("write checkpoint %s: %w", tmp, err)
	}
	if err := fsyncFile(tmp); err != nil {
		return "", err
	}
	latest := filepath.Join(dir, LatestCheckpoint)
	if _, err := os.Stat(latest); err == nil {
		prev := filepath.Join(dir, PreviousCheckpoint)
		os.Remove(prev)
		if err := os.Link(latest, prev); err != nil {
			return "", fmt.Errorf("keep previous checkpoint: %w", err)
		}
	}
	if err := os.Rename(tmp, latest); err != nil {
		return "", fmt.Errorf("install checkpoint: %w", err)
	}
	if err := fsyncFile(dir); err != nil {
		return "", err
	}
	return latest, nil
}

func fsyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}
