package bisect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// roots: the directory of each file read, a parent holding two or more of
// them instead, never above two levels; a file in a shallower directory
// stands alone.
func TestEvictionRoots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{"one directory", []string{"/data/set/a.bin", "/data/set/b.bin"}, []string{"/data/set"}},
		{"a directory per class", []string{"/data/set/cat/1.jpg", "/data/set/dog/2.jpg", "/data/set/dog/3.jpg"}, []string{"/data/set"}},
		{"a Zarr store's arrays", []string{"/d/e/f.zarr/x/0.0", "/d/e/f.zarr/y/0", "/d/e/f.zarr/x/1.0"}, []string{"/d/e/f.zarr"}},
		{"never above two levels", []string{"/data/a/1.bin", "/data/b/2.bin"}, []string{"/data/a", "/data/b"}},
		{"a lone file", []string{"/tmp/one.bin", "/srv/set/x.h5"}, []string{"/srv/set", "/tmp/one.bin"}},
		{"a directory inside another", []string{"/srv/set/x.h5", "/srv/set/more/y.h5"}, []string{"/srv/set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roots(tc.paths)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("roots(%v) = %v, want %v", tc.paths, got, tc.want)
			}
		})
	}
}

// What the loader phase recorded is read back without code, devices,
// bisect's own files or what is not a regular file; evict drops every
// regular file under the roots and counts them.
func TestRecordedAndEvicted(t *testing.T) {
	data, own := t.TempDir(), t.TempDir()
	var files []string
	for _, n := range []string{"a.bin", "b.bin", "sub/c.bin"} {
		p := filepath.Join(data, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 1000), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	list := []string{files[0], files[0], files[1], filepath.Join(data, "sub"), "/usr/lib/x.so", filepath.Join(own, "bisect-1.json"),
		filepath.Join(data, "train.py"), filepath.Join(data, "gone.bin")}
	write := func(name string, lines []string) {
		b := []byte{}
		for _, l := range lines {
			b = append(b, l+"\n"...)
		}
		if err := os.WriteFile(filepath.Join(own, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("files-11.txt", list)
	write(fdFile, []string{files[2]})
	got := recorded(own, own)
	if want := []string{files[0], files[1], files[2]}; !slices.Equal(got, want) {
		t.Fatalf("recorded %v, want %v", got, want)
	}
	ev := evict(roots(got))
	if ev.Files != 3 || ev.Bytes != 3000 || ev.Note != "" || !slices.Equal(ev.Roots, []string{data}) {
		t.Errorf("eviction %+v", ev)
	}
}
