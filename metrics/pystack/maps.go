package pystack

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// mapping is one line of /proc/PID/maps that maps a file.
type mapping struct {
	start, offset uint64
	path          string
}

// readMaps reads pid's file mappings.
func readMaps(pid int) ([]mapping, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	return parseMaps(b), nil
}

// parseMaps parses the lines of a maps file that name a file
// ("start-end perms offset dev inode path"); other lines are skipped.
func parseMaps(b []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, _, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		off, err2 := strconv.ParseUint(f[2], 16, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		out = append(out, mapping{start: start, offset: off, path: strings.Join(f[5:], " ")})
	}
	return out
}

// libpythonName matches a shared libpython's file name and its version.
var libpythonName = regexp.MustCompile(`^libpython(\d)\.(\d+)[a-z]*\.so`)

// pythonName matches an executable or libpython named for its version.
var pythonName = regexp.MustCompile(`^(?:lib)?python(\d)\.(\d+)`)

// candidates is where the runtime may be: each libpython mapped, then the
// executable.
func candidates(maps []mapping, exe string) []string {
	var out []string
	for _, m := range maps {
		if libpythonName.MatchString(filepath.Base(m.path)) && !strings.HasSuffix(m.path, " (deleted)") && !slices.Contains(out, m.path) {
			out = append(out, m.path)
		}
	}
	return append(out, exe)
}

// nameVersion is the version a file's name gives (python3.10,
// libpython3.10.so.1.0), false when it names none.
func nameVersion(path string) (Version, bool) {
	m := pythonName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return Version{}, false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return Version{Major: major, Minor: minor, Micro: -1}, true
}
