// Package architecture checks the import map of docs/architecture.md
// against `go list`: the table there is generated from the packages' real
// imports (go test ./tests/architecture -update rewrites it), and the
// layering rules below hold for every package and its dependencies.
package architecture

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the import map in docs/architecture.md")

const (
	module  = "github.com/pipetop/pipetop/"
	docPath = "../../docs/architecture.md"
	begin   = "<!-- import map: generated from go list by tests/architecture (go test ./tests/architecture -update) -->"
	end     = "<!-- end of the import map -->"
)

// pkg is one package of the module as go list sees it.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func (p pkg) name() string { return strings.TrimPrefix(p.ImportPath, module) }

// ours are p's direct imports of the module's packages, without the prefix.
func (p pkg) ours() []string {
	var out []string
	for _, i := range p.Imports {
		if strings.HasPrefix(i, module) {
			out = append(out, strings.TrimPrefix(i, module))
		}
	}
	return out
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.name(), "tests/") {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// table is the import map as docs/architecture.md writes it.
func table(pkgs []pkg) string {
	var b strings.Builder
	b.WriteString("| package | imports (ours) |\n| --- | --- |\n")
	for _, p := range pkgs {
		imports := "—"
		if ours := p.ours(); len(ours) > 0 {
			imports = "`" + strings.Join(ours, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", p.name(), imports)
	}
	return b.String()
}

// TestImportMapCurrent fails when the import map in docs/architecture.md
// is not what go list says.
func TestImportMapCurrent(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the import map markers %q ... %q", docPath, begin, end)
	}
	want := table(list(t))
	have := string(doc[i+len(begin) : j])
	if strings.TrimSpace(have) == strings.TrimSpace(want) {
		return
	}
	if *update {
		out := append(append(append([]byte{}, doc[:i+len(begin)]...), "\n"+want...), doc[j:]...)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the import map in %s disagrees with go list; run go test ./tests/architecture -update\n--- go list says\n%s", docPath, want)
}

// rule is one layering rule: the packages it covers may not import (or,
// with deps, depend on at all) anything a forbidden entry names.
type rule struct {
	// from are the packages covered, with their subpackages unless only.
	from []string
	only bool
	// forbidden are ours ("tui": tui and below), third-party module
	// prefixes (with a dot), or "" for every package of ours.
	forbidden []string
	deps      bool // check every dependency, not only direct imports
	why       string
}

var rules = []rule{
	{[]string{"metrics"}, false, []string{"cmd", "tui", "export", "monitor", "ipc", "trainer", "clients", "internal"}, false,
		"metrics imports nothing of ours outside metrics"},
	{[]string{"ipc"}, false, []string{"cmd", "tui", "export", "monitor", "trainer", "clients", "metrics/gpu", "metrics/host", "metrics/ring", "metrics/units", "metrics/verdict"}, false,
		"ipc imports only the record types (metrics/stage)"},
	{[]string{"metrics/stage"}, false, []string{"metrics/verdict"}, true, "judging apart from measuring: the verdict reads the stage package, never the other way"},
	{[]string{"tui"}, false, []string{"trainer", "export", "cmd"}, false, "the screen never imports the trainer or the exporter"},
	{[]string{"export"}, false, []string{"tui", "trainer", "charm.land/", "github.com/charmbracelet/"}, true, "the exporter is headless"},
	{[]string{"monitor"}, false, []string{"tui", "export", "trainer", "cmd", "github.com/prometheus/"}, true,
		"the headless viewer does not link the Prometheus client"},
	{[]string{"monitor", "monitor/feed", "monitor/recording", "monitor/snapshot", "monitor/source", "monitor/summary", "monitor/sources/host"}, true, []string{"github.com/NVIDIA/"}, true,
		"only the registered sources (monitor/sources) link NVML; its table of the others (monitor/sources/host) does not"},
	{[]string{"monitor/recording"}, true, []string{"monitor/snapshot"}, true, "recordings keep each source's part without knowing it"},
	{[]string{"trainer"}, false, []string{"tui", "export", "monitor", "cmd"}, false, "the trainer never imports a viewer"},
	{[]string{"cmd/pipetrain"}, false, []string{"tui", "export", "github.com/prometheus/", "github.com/NVIDIA/", "charm.land/"}, true,
		"pipetrain links neither the screen, Prometheus nor NVML"},
	{[]string{"internal/testkit", "clients/python"}, true, []string{""}, false, "imports nothing of ours (test helpers; the embedded publisher)"},
}

// covers reports whether the rule covers package name.
func (r rule) covers(name string) bool {
	for _, f := range r.from {
		if name == f || (!r.only && strings.HasPrefix(name, f+"/")) {
			return true
		}
	}
	return false
}

// forbids reports whether the rule forbids depending on path (a full
// import path).
func (r rule) forbids(path string) bool {
	short := strings.TrimPrefix(path, module)
	ours := short != path
	for _, f := range r.forbidden {
		switch {
		case f == "" && ours:
			return true
		case f == "":
		case strings.Contains(f, "."):
			if strings.HasPrefix(path, f) {
				return true
			}
		case ours && (short == f || strings.HasPrefix(short, f+"/")):
			return true
		}
	}
	return false
}

// TestLayering checks every rule against every package.
func TestLayering(t *testing.T) {
	for _, p := range list(t) {
		for _, r := range rules {
			if !r.covers(p.name()) {
				continue
			}
			paths := p.Imports
			if r.deps {
				paths = p.Deps
			}
			for _, dep := range paths {
				if r.forbids(dep) {
					t.Errorf("%s depends on %s: %s", p.name(), strings.TrimPrefix(dep, module), r.why)
				}
			}
		}
	}
}

// TestRulesCanFail: each rule forbids what it says, so a broken arrow would
// be caught.
func TestRulesCanFail(t *testing.T) {
	for _, c := range []struct {
		pkg, dep string
	}{
		{"tui/components/flame", module + "trainer/loader"},
		{"export", "charm.land/bubbletea/v2"},
		{"monitor/feed", "github.com/NVIDIA/go-nvml/pkg/nvml"},
		{"monitor/sources/host", "github.com/NVIDIA/go-nvml/pkg/nvml"},
		{"monitor/sources/cpu", "github.com/prometheus/client_golang/prometheus"},
		{"cmd/pipetrain", "github.com/NVIDIA/go-nvml/pkg/nvml"},
		{"internal/testkit", module + "ipc"},
		{"metrics/stage", module + "ipc"},
		{"metrics/stage", module + "metrics/verdict"},
		{"ipc", module + "metrics/verdict"},
	} {
		caught := false
		for _, r := range rules {
			caught = caught || (r.covers(c.pkg) && r.forbids(c.dep))
		}
		if !caught {
			t.Errorf("no rule forbids %s -> %s", c.pkg, c.dep)
		}
	}
	for _, r := range rules {
		if r.covers("monitor/sources/gpu") && r.forbids("github.com/NVIDIA/go-nvml/pkg/nvml") {
			t.Error("the NVML rule must leave the GPU source alone")
		}
	}
}
