package bisect

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// Bounds of an eviction: a walk over a huge tree stops there, said so.
const (
	maxEvictFiles = 1000000
	maxEvictTime  = time.Minute
	// minRootDepth: a directory evicted whole is at least this deep
	// (/data/set, not /data or /tmp).
	minRootDepth = 2
)

// evictFor drops from the page cache what the cold phase reads: the whole
// cache with c.DropCaches (as root), else every regular file under the
// directories the warm loader phase in warmDir read its files from.
func evictFor(c Config, warmDir string) verdict.Eviction {
	if c.DropCaches {
		ev := verdict.Eviction{Whole: true}
		unix.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0o200); err != nil {
			ev.Note = fmt.Sprintf("the whole page cache was not dropped (%v: it needs root); the files the loader phase read were evicted instead", err)
		} else {
			return ev
		}
		files := evict(roots(recorded(warmDir, c.Dir)))
		files.Whole, files.Note = false, ev.Note+joinNote(files.Note)
		return files
	}
	ev := evict(roots(recorded(warmDir, c.Dir)))
	if len(ev.Roots) == 0 {
		ev.Note = "the loader phase read no file pipetop could see: nothing was evicted, the cold phase reads what the page cache holds"
	}
	return ev
}

// joinNote is "; note", or "" for none.
func joinNote(note string) string {
	if note == "" {
		return ""
	}
	return "; " + note
}

// roots are the directories (or lone files) whose files a cold phase
// evicts: the directory of each file read, replaced by its parent where
// two or more of the parent's subdirectories held files read (a
// directory per class, per episode, a Zarr array's per field), never above
// minRootDepth; a file whose directory is not that deep stands alone.
func roots(paths []string) []string {
	dirs := map[string]bool{}
	var out []string
	for _, p := range paths {
		if d := filepath.Dir(p); depth(d) >= minRootDepth {
			dirs[d] = true
		} else {
			out = append(out, p)
		}
	}
	for changed := true; changed; {
		changed = false
		children := map[string]int{}
		for d := range dirs {
			children[filepath.Dir(d)]++
		}
		for d := range dirs {
			if up := filepath.Dir(d); children[up] >= 2 && depth(up) >= minRootDepth {
				delete(dirs, d)
				dirs[up], changed = true, true
			}
		}
	}
	for d := range dirs {
		if !under(d, dirs) {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// depth is how many elements path has: /data/set is 2.
func depth(path string) int {
	return len(strings.FieldsFunc(path, func(r rune) bool { return r == '/' }))
}

// under is whether d lies inside another directory of dirs.
func under(d string, dirs map[string]bool) bool {
	for up := filepath.Dir(d); up != d && up != "/"; d, up = up, filepath.Dir(up) {
		if dirs[up] {
			return true
		}
	}
	return false
}

// evict drops every regular file under roots from the page cache
// (POSIX_FADV_DONTNEED, after writing back what is dirty), within
// maxEvictFiles and maxEvictTime.
func evict(rs []string) verdict.Eviction {
	ev := verdict.Eviction{Roots: rs}
	end := time.Now().Add(maxEvictTime)
	for _, root := range rs {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if ev.Files >= maxEvictFiles || time.Now().After(end) {
				ev.Note = fmt.Sprintf("eviction stopped after %d files (%s): the rest may still be cached", ev.Files, units.Bytes(float64(ev.Bytes)))
				return fs.SkipAll
			}
			if n, ok := evictFile(path); ok {
				ev.Files++
				ev.Bytes += n
			}
			return nil
		})
		if err != nil || ev.Note != "" {
			break
		}
	}
	return ev
}

// evictFile drops one file's pages from the page cache; its size, and
// whether it could.
func evictFile(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	fd := int(f.Fd())
	unix.Fdatasync(fd) // dirty pages are not dropped; written back first
	if unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED) != nil {
		return 0, false
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, true
	}
	return fi.Size(), true
}

// evictionText says what an eviction dropped, for the progress.
func evictionText(ev verdict.Eviction) string {
	s := fmt.Sprintf("evicted %d files (%s) from the page cache", ev.Files, units.Bytes(float64(ev.Bytes)))
	if ev.Whole {
		s = "dropped the whole page cache"
	} else if len(ev.Roots) > 0 {
		s += " under " + strings.Join(ev.Roots, ", ")
	}
	return s + joinNote(ev.Note)
}
