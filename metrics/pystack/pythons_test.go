package pystack

import (
	"os"
	"path/filepath"
	"testing"
)

// python is an interpreter the live tests run, and the minor version it is.
type python struct {
	name  string
	exe   string
	minor int
}

// pythons are the interpreters the live tests read: pyenv's 3.10 to 3.13
// builds (shared libpython) and Debian's /usr/bin/python3.11 (the runtime
// in the executable).
func pythons() []python {
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	pyenv := func(minor string) string {
		found, _ := filepath.Glob(filepath.Join(root, "versions", "3."+minor+".*", "bin", "python3."+minor))
		if len(found) == 0 {
			return filepath.Join(root, "versions", "3."+minor+".x", "bin", "python3."+minor)
		}
		return found[len(found)-1]
	}
	return []python{
		{"3.10 pyenv", pyenv("10"), 10},
		{"3.11 Debian", "/usr/bin/python3.11", 11},
		{"3.11 pyenv", pyenv("11"), 11},
		{"3.12 pyenv", pyenv("12"), 12},
		{"3.13 pyenv", pyenv("13"), 13},
	}
}

// need skips t when py is not installed.
func (py python) need(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(py.exe); err != nil {
		t.Skipf("CPython %s is not installed here (%s)", py.name, py.exe)
	}
}
