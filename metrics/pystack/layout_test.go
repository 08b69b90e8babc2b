package pystack

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// headerDirs are the CPython headers installed here, by the version they
// are: pyenv's builds and Debian's python3.11-dev.
func headerDirs() map[string][]string {
	dirs := map[string][]string{}
	home, _ := os.UserHomeDir()
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		root = filepath.Join(home, ".pyenv")
	}
	for _, minor := range []int{10, 11, 12, 13} {
		name := "python3." + strconv.Itoa(minor)
		found, _ := filepath.Glob(filepath.Join(root, "versions", "3."+strconv.Itoa(minor)+".*", "include", name))
		for _, dir := range found {
			dirs[dir] = []string{"-I" + dir}
		}
		if deb := "/usr/include/" + name; fileExists(filepath.Join(deb, "internal", "pycore_frame.h")) {
			dirs[deb] = []string{"-I" + deb, "-I/usr/include/x86_64-linux-gnu/" + name}
		}
	}
	return dirs
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestLayoutMatchesHeaders compiles testdata/offsets.c against every
// CPython's headers installed here and compares what it prints with the
// table's entry for that version, field by field.
func TestLayoutMatchesHeaders(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc to compile testdata/offsets.c")
	}
	dirs := headerDirs()
	if len(dirs) == 0 {
		t.Skip("no CPython 3.10-3.13 headers with their internal ones installed")
	}
	src, err := filepath.Abs("testdata/offsets.c")
	if err != nil {
		t.Fatal(err)
	}
	for dir, flags := range dirs {
		t.Run(dir, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "offsets")
			out, err := exec.Command("gcc", append(flags, "-o", bin, src)...).CombinedOutput()
			if err != nil {
				t.Fatalf("gcc: %v\n%s", err, out)
			}
			out, err = exec.Command(bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			printed := parseOffsets(t, out)
			lay, ok := layouts[printed["version"]&0xff]
			if !ok {
				t.Fatalf("no layout for version %#x", printed["version"])
			}
			delete(printed, "version")
			table := layoutFields(lay)
			for key, v := range printed {
				if got, ok := table[key]; !ok || got != v {
					t.Errorf("%s: table %d (present %v), headers %d", key, got, ok, v)
				}
			}
			for key, v := range table {
				if _, ok := printed[key]; !ok && v != -1 {
					t.Errorf("%s: table %d, but the headers have no such field", key, v)
				}
			}
		})
	}
}

// parseOffsets parses offsets.c's "key value" lines.
func parseOffsets(t *testing.T, out []byte) map[string]int {
	m := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.Atoi(val)
		if !ok || err != nil {
			t.Fatalf("offsets.c printed %q", sc.Text())
		}
		m[key] = n
	}
	return m
}

// layoutFields is the layout's fields by their off tag.
func layoutFields(l layout) map[string]int {
	m := map[string]int{}
	v := reflect.ValueOf(l)
	for i := 0; i < v.NumField(); i++ {
		if tag := v.Type().Field(i).Tag.Get("off"); tag != "" {
			m[tag] = int(v.Field(i).Int())
		}
	}
	return m
}

// TestLayoutsCheck checks every table entry against its own sizes.
func TestLayoutsCheck(t *testing.T) {
	for minor, l := range layouts {
		if l.minor != minor {
			t.Errorf("layouts[%d].minor = %d", minor, l.minor)
		}
		if err := l.check(); err != nil {
			t.Errorf("3.%d: %v", minor, err)
		}
	}
}
