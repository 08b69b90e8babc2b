package stacks

import (
	"path"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
)

// files tells the user's code from libraries' in a process's file names
// and shortens them as the Python instrumentation does (stacks.Files): a
// package's file relative to its site-packages (zarr/core.py, lib zarr), a
// standard module relative to the standard library (json/decoder.py, lib
// json), the user's own relative to the process's working directory.
type files struct {
	cwd  string // the process's working directory, with a trailing slash; "" unknown
	seen map[string]where
}

// where is a file as shown; skip: pipetop's own (left out of stacks).
type where struct {
	file, lib string
	skip      bool
}

// markers are the directories packages are installed under.
var markers = []string{"/site-packages/", "/dist-packages/"}

// ownDir is the instrumentation's package: its frames are left out.
const ownDir = "/pipetop_publish/"

func newFiles(cwd string) *files {
	if cwd != "" && !strings.HasSuffix(cwd, "/") {
		cwd += "/"
	}
	return &files{cwd: cwd, seen: make(map[string]where)}
}

// describe is how file is shown.
func (f *files) describe(file string) where {
	if w, ok := f.seen[file]; ok {
		return w
	}
	w := f.place(file)
	if len(f.seen) < 1<<16 {
		f.seen[file] = w
	}
	return w
}

func (f *files) place(file string) where {
	if inner, ok := strings.CutPrefix(file, "<"); ok {
		inner = strings.TrimSuffix(inner, ">")
		if mod, ok := strings.CutPrefix(inner, "frozen "); ok {
			return where{file: file, lib: strings.Split(mod, ".")[0]}
		}
		return where{file: file}
	}
	if strings.Contains(file, ownDir) {
		return where{skip: true}
	}
	for _, m := range markers {
		if i := strings.LastIndex(file, m); i >= 0 {
			return lib(file[i+len(m):])
		}
	}
	if i := stdlibRoot(file); i >= 0 {
		return lib(file[i:])
	}
	if f.cwd != "" {
		if rel, ok := strings.CutPrefix(file, f.cwd); ok {
			return where{file: rel}
		}
	}
	return where{file: file}
}

// stdlibRoot is where the path under a standard library (.../lib/python3.N/)
// begins in file; -1 when it is not under one.
func stdlibRoot(file string) int {
	i := strings.LastIndex(file, "/lib/python3")
	if i < 0 {
		return -1
	}
	rest := file[i+len("/lib/"):]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return -1
	}
	return i + len("/lib/") + j + 1
}

// lib is a library's file rel (relative to its root) and its top package.
func lib(rel string) where {
	top, _, _ := strings.Cut(rel, "/")
	top = strings.TrimSuffix(top, ".py")
	if top == "" {
		top = "python"
	}
	return where{file: rel, lib: top}
}

// frame is the code frame of a function name at line of file, and
// whether it is shown at all.
func (f *files) frame(name, file string, line int) (stage.CodeFrame, bool) {
	w := f.describe(file)
	if w.skip {
		return stage.CodeFrame{}, false
	}
	return stage.CodeFrame{Name: name, File: path.Clean(w.file), Line: line, Lib: w.lib}, true
}
