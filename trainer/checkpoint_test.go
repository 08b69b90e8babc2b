package trainer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteCheckpointKeepsPrevious(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	write := func(content string) func(string) error {
		return func(p string) error { return os.WriteFile(p, []byte(content), 0o644) }
	}
	if _, err := WriteCheckpoint(dir, write("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteCheckpoint(dir, write("two")); err != nil {
		t.Fatal(err)
	}
	// A failing write leaves both as they were, and no temp file behind.
	if _, err := WriteCheckpoint(dir, func(p string) error {
		os.WriteFile(p, []byte("half"), 0o644)
		return errors.New("disk full")
	}); err == nil {
		t.Fatal("failing write succeeded")
	}
	for name, want := range map[string]string{LatestCheckpoint: "two", PreviousCheckpoint: "one"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d files, want 2", len(entries))
	}
}
