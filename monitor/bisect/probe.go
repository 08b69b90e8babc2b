package bisect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Probing: often at first (a script that fails at once runs for a moment),
// then less.
const (
	probeFast     = 100 * time.Millisecond
	probeFastFor  = 3 * time.Second
	probeSlow     = 500 * time.Millisecond
	probeMaxComms = 4
)

// probe watches a phase's processes while nothing instrumented has
// connected, to say why none did: no Python process, or one without
// pipetop's environment, with the instrumentation off, or that never
// imported torch.
type probe struct {
	root int
	boot string // the first entry of the PYTHONPATH pipetop sets

	mu       sync.Mutex
	seen     map[int]*procSeen
	comms    []string
	python   int // Python processes seen
	withEnv  int // ... whose environment holds the phase
	withPath int // ... whose PYTHONPATH holds pipetop's bootstrap
	autoOff  int // ... with PIPETOP_AUTO switched off
	torch    int // ... that loaded torch
}

// procSeen is what the probe knows of one process.
type procSeen struct {
	python, torch bool
}

// newProbe is a probe of root's process tree; env is the environment
// pipetop gives the command (its PYTHONPATH's first entry is the
// instrumentation's bootstrap).
func newProbe(root int, env []string) *probe {
	pr := &probe{root: root, seen: map[int]*procSeen{}}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			pr.boot, _, _ = strings.Cut(v, string(os.PathListSeparator))
		}
	}
	return pr
}

// run looks at the tree until stop is closed; done is closed then.
func (pr *probe) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	start := time.Now()
	for {
		pr.look()
		wait := probeSlow
		if time.Since(start) < probeFastFor {
			wait = probeFast
		}
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
	}
}

// look reads every process of the tree it has not classified yet.
func (pr *probe) look() {
	pids := descendants(pr.root)
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, pid := range pids {
		ps := pr.seen[pid]
		if ps == nil {
			ps = pr.first(pid)
			if ps == nil {
				continue
			}
			pr.seen[pid] = ps
		}
		if ps.python && !ps.torch && loaded(pid, "torch") {
			ps.torch = true
			pr.torch++
		}
	}
}

// first classifies a process seen for the first time; nil when it is gone.
func (pr *probe) first(pid int) *procSeen {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return nil
	}
	name := strings.TrimSpace(string(comm))
	if exe, err := os.Readlink(filepath.Join(dir, "exe")); err == nil {
		name = filepath.Base(exe)
	}
	if len(pr.comms) < probeMaxComms && !slices.Contains(pr.comms, name) {
		pr.comms = append(pr.comms, name)
	}
	ps := &procSeen{python: strings.HasPrefix(name, "python")}
	if !ps.python {
		return ps
	}
	pr.python++
	env, _ := os.ReadFile(filepath.Join(dir, "environ"))
	vars := bytes.Split(env, []byte{0})
	has := func(prefix string) (string, bool) {
		for _, v := range vars {
			if rest, ok := bytes.CutPrefix(v, []byte(prefix)); ok {
				return string(rest), true
			}
		}
		return "", false
	}
	if _, ok := has("PIPETOP_BISECT_PHASE="); ok {
		pr.withEnv++
	}
	if path, ok := has("PYTHONPATH="); ok && pr.boot != "" && slices.Contains(filepath.SplitList(path), pr.boot) {
		pr.withPath++
	}
	if v, ok := has("PIPETOP_AUTO="); ok && slices.Contains([]string{"0", "false", "no", "off"}, strings.ToLower(strings.TrimSpace(v))) {
		pr.autoOff++
	}
	return ps
}

// why says why nothing instrumented connected, from what the probe saw
// (the reason alone: the caller says when).
func (pr *probe) why() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ran := "nothing it started was seen"
	if len(pr.comms) > 0 {
		ran = "it ran " + strings.Join(pr.comms, ", ")
	}
	var reason string
	switch {
	case pr.python == 0:
		reason = fmt.Sprintf("the command ran no Python process (%s); pipetop measures a Python script that imports torch", ran)
	case pr.withEnv == 0:
		reason = "its Python processes did not get pipetop's environment (PIPETOP_* and PYTHONPATH): something between (a launcher, sudo, a container's env) stripped it"
	case pr.autoOff > 0:
		reason = "PIPETOP_AUTO=0 in its environment switches the instrumentation off"
	case pr.boot != "" && pr.withPath == 0:
		reason = "its PYTHONPATH was replaced, without pipetop's bootstrap (" + pr.boot + "): the instrumentation never loaded"
	case pr.torch == 0:
		reason = "its Python processes never imported torch"
	default:
		reason = "it imported torch but reached no DataLoader batch, forward or backward"
	}
	return reason
}

// descendants are root and every process below it, from the parent links
// in /proc.
func descendants(root int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	kids := map[int][]int{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if ppid := parentPID(d); ppid > 0 {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// parentPID is the parent of the process whose /proc directory is dir; 0
// when unknown.
func parentPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0
	}
	// The fields after the command, which may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// loaded is whether pid has a file whose path holds name mapped (a shared
// library of torch).
func loaded(pid int, name string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "maps"))
	return err == nil && bytes.Contains(b, []byte("/"+name+"/"))
}
