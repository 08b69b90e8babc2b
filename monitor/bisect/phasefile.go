package bisect

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pipetop/pipetop/metrics/verdict"
)

// phaseFile is what the instrumentation writes of a phase
// (bisect-PID.json, pipetop-bisect-phase/1, docs/python.md): the parts
// bisect reads.
type phaseFile struct {
	Schema string `json:"schema"`
	Phase  string `json:"phase"`
	Loader *struct {
		Seen      bool   `json:"seen"`
		Iterable  bool   `json:"iterable"`
		BatchSize int    `json:"batch_size"`
		Site      string `json:"site"`
		Path      string `json:"site_path"`
		Line      int    `json:"site_line"`
		Args      *struct {
			NumWorkers        int  `json:"num_workers"`
			PrefetchFactor    *int `json:"prefetch_factor"`
			PersistentWorkers bool `json:"persistent_workers"`
			PinMemory         bool `json:"pin_memory"`
		} `json:"args"`
	} `json:"loader"`
	Cache *struct {
		Batches int   `json:"batches"`
		Bytes   int64 `json:"bytes"`
		// CleanStep is the first step that neither filled the cache nor
		// waited on the loader; absent until the cache is full and the
		// loader shut down.
		CleanStep *int64 `json:"clean_step"`
	} `json:"cache"`
	// Off is set once the phase logic switched itself off (the run went
	// on as the full phase).
	Off   bool     `json:"off"`
	Notes []string `json:"notes"`
}

// phaseFiles reads every process's file in dir; one that cannot be read
// becomes a note naming it.
func phaseFiles(dir string) ([]phaseFile, []string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "bisect-*.json"))
	var files []phaseFile
	var bad []string
	for _, p := range paths {
		var f phaseFile
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil || f.Schema != "pipetop-bisect-phase/1" {
			bad = append(bad, fmt.Sprintf("%s: not a phase file (%v)", p, err))
			continue
		}
		files = append(files, f)
	}
	return files, bad
}

// phaseNotes are the notes of every process of the phase, each once.
func phaseNotes(dir string) []string {
	files, notes := phaseFiles(dir)
	for _, f := range files {
		for _, n := range f.Notes {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	return notes
}

// skipNote says why the loader and cached phases cannot run: no process
// saw a training DataLoader. "" when one did, or for the other phases.
func skipNote(dir, phase string) string {
	if phase != verdict.PhaseLoader && phase != verdict.PhaseCold && phase != verdict.PhaseCached {
		return ""
	}
	files, _ := phaseFiles(dir)
	if len(files) == 0 {
		return ""
	}
	for _, f := range files {
		if f.Loader == nil || f.Loader.Seen {
			return ""
		}
	}
	return "the script has no torch DataLoader before its first optimizer step, so its input cannot be run alone or replayed"
}

// dataLoaderOf is the training DataLoader the phase's processes saw (the
// first file's that says where it was made), nil when none does.
func dataLoaderOf(dir string) *verdict.DataLoaderCall {
	files, _ := phaseFiles(dir)
	for _, f := range files {
		l := f.Loader
		if l == nil || !l.Seen || l.Site == "" || l.Args == nil {
			continue
		}
		a := l.Args
		return &verdict.DataLoaderCall{Site: l.Site, Path: l.Path, Line: l.Line, NumWorkers: a.NumWorkers, PrefetchFactor: a.PrefetchFactor,
			PersistentWorkers: a.PersistentWorkers, PinMemory: a.PinMemory, BatchSize: l.BatchSize, Iterable: l.Iterable}
	}
	return nil
}

// published is whether a process of the phase in dir published: the
// instrumentation writes its phase file when its publisher starts (a
// script that ends in moments may be gone before its socket is seen).
func published(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "bisect-*.json"))
	return len(files) > 0
}

// cacheReady says whether a phase's warm-up may count steps, and from
// which: a cached or forward phase's once its cache is full and its loader
// shut down (in every process that saw the training loader), from the
// first step after that; any other phase's from the first.
func cacheReady(dir, phase string) (from int64, ok bool) {
	from = 1
	if phase != verdict.PhaseCached && phase != verdict.PhaseForward {
		return from, true
	}
	files, _ := phaseFiles(dir)
	for _, f := range files {
		c := f.Cache
		switch {
		case f.Off || c == nil || f.Loader == nil || !f.Loader.Seen:
		case c.CleanStep == nil:
			return 0, false
		default:
			from = max(from, *c.CleanStep)
		}
	}
	return from, true
}

// cacheOf is the cache the phase's processes kept: its bytes and batches
// summed over them.
func cacheOf(dir string) (bytes int64, batches int) {
	files, _ := phaseFiles(dir)
	for _, f := range files {
		if f.Cache != nil {
			bytes += f.Cache.Bytes
			batches += f.Cache.Batches
		}
	}
	return bytes, batches
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write keeps the end of p and what came before, up to max bytes.
func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

// String is the kept text from its first whole line, at most 15 lines.
func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// multi writes to w and the tail.
func multi(w io.Writer, t *tailWriter) io.Writer { return io.MultiWriter(w, t) }
