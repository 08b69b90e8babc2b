package torch

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envelope wraps payload in a checkpoint header with a valid checksum, so
// the archive parser itself is exercised (see csrc/checkpoint.cpp).
func envelope(payload []byte) []byte {
	h := uint64(0xcbf29ce484222325)
	i := 0
	for ; i+8 <= len(payload); i += 8 {
		h = (h ^ binary.LittleEndian.Uint64(payload[i:])) * 0x100000001b3
	}
	for ; i < len(payload); i++ {
		h = (h ^ uint64(payload[i])) * 0x100000001b3
	}
	out := make([]byte, 32, 32+len(payload))
	copy(out, "PTCKPT\r\n")
	binary.LittleEndian.PutUint32(out[8:], 1)
	binary.LittleEndian.PutUint64(out[16:], uint64(len(payload)))
	binary.LittleEndian.PutUint64(out[24:], h)
	return append(out, payload...)
}

func TestLoadRefusesGarbageArchive(t *testing.T) {
	p := newPolicy(t, openLib(t), tinyConfig(1))
	path := filepath.Join(t.TempDir(), "garbage.ckpt")
	if err := os.WriteFile(path, envelope([]byte("PK\x03\x04 this is no zip archive")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := p.Load(path)
	if err == nil || !strings.Contains(err.Error(), "unreadable archive") {
		t.Fatalf("Load(garbage archive) = %v, want an unreadable-archive error", err)
	}
}

// FuzzLoadCheckpoint feeds arbitrary files to Load: it must fail cleanly
// (naming the file) or succeed, never crash.
func FuzzLoadCheckpoint(f *testing.F) {
	p := newPolicy(f, openLib(f), tinyConfig(1))
	dir := f.TempDir()
	good := filepath.Join(dir, "good.ckpt")
	if err := p.Save(good, []byte("x")); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:64])
	f.Add(b[:32])
	f.Add(envelope(nil))
	f.Add(envelope([]byte("PK\x05\x06")))
	f.Add([]byte("PTCKPT\r\n"))
	path := filepath.Join(dir, "fuzz.ckpt")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Load(path); err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}
