package pystack

import (
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"testing"
)

// pyCode is one code object as testdata/linetables.py prints it.
type pyCode struct {
	Name  string   `json:"name"`
	First int      `json:"first"`
	Table string   `json:"table"`
	Lines [][3]int `json:"lines"` // start and end byte offsets, line (0: none)
}

// lineTables runs testdata/linetables.py under py.
func lineTables(t *testing.T, py python) []pyCode {
	t.Helper()
	out, err := exec.Command(py.exe, "testdata/linetables.py").Output()
	if err != nil {
		t.Fatalf("%s testdata/linetables.py: %v", py.exe, err)
	}
	var dump struct {
		Version [2]int   `json:"version"`
		Codes   []pyCode `json:"codes"`
	}
	if err := json.Unmarshal(out, &dump); err != nil {
		t.Fatal(err)
	}
	if dump.Version[1] != py.minor || len(dump.Codes) < 10 {
		t.Fatalf("%s: version %v, %d code objects", py.exe, dump.Version, len(dump.Codes))
	}
	return dump.Codes
}

// TestLineTablesMatchPython decodes every instruction's line of a sample
// module's code objects (far line jumps, long lines, loops, handlers,
// nested functions) and compares it with the interpreter's own answer.
func TestLineTablesMatchPython(t *testing.T) {
	for _, py := range pythons() {
		t.Run(py.name, func(t *testing.T) {
			py.need(t)
			for _, c := range lineTables(t, py) {
				table, err := hex.DecodeString(c.Table)
				if err != nil {
					t.Fatal(err)
				}
				bad := 0
				for _, r := range c.Lines {
					for off := r[0]; off < r[1]; off += 2 {
						got := line311(table, c.First, off/2)
						if py.minor == 10 {
							got = line310(table, c.First, off)
						}
						if got != r[2] && bad < 5 {
							bad++
							t.Errorf("%s: byte offset %d: line %d, Python says %d", c.Name, off, got, r[2])
						}
					}
				}
			}
		})
	}
}

// TestLineTableEdges covers what a frame may ask beyond the table.
func TestLineTableEdges(t *testing.T) {
	cases := []struct {
		name  string
		v310  bool
		table []byte
		first int
		at    int
		want  int
	}{
		{"3.10 before the first instruction", true, []byte{8, 1}, 5, -2, 5},
		{"3.10 past the table", true, []byte{8, 1}, 5, 8, 0},
		{"3.10 no line", true, []byte{4, 0x80}, 5, 2, 0},
		{"3.10 empty ranges add their lines", true, []byte{0, 3, 6, 1}, 5, 2, 9},
		{"3.10 odd-length table", true, []byte{8, 1, 4}, 5, 9, 0},
		{"3.11 not started", false, []byte{0x80 | 13<<3, 2}, 5, -1, 5},
		{"3.11 no columns", false, []byte{0x80 | 13<<3 | 1, 2}, 5, 1, 6},
		{"3.11 one line form +2", false, []byte{0x80 | 12<<3 | 3, 1, 2}, 5, 3, 7},
		{"3.11 no location", false, []byte{0x80 | 15<<3 | 3}, 5, 0, 0},
		{"3.11 negative long form", false, []byte{0x80 | 14<<3, 3, 0, 1, 1}, 5, 0, 4},
		{"3.11 varint cut short", false, []byte{0x80 | 13<<3, 0x41}, 5, 0, 5},
		{"3.11 past the table", false, []byte{0x80 | 13<<3, 2}, 5, 1, 0},
		{"first line below zero", false, nil, -3, -1, 0},
	}
	for _, c := range cases {
		got := line311(c.table, c.first, c.at)
		if c.v310 {
			got = line310(c.table, c.first, c.at)
		}
		if got != c.want {
			t.Errorf("%s: line %d, want %d", c.name, got, c.want)
		}
	}
}
