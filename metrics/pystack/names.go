package pystack

import (
	"bytes"
	"fmt"
	"os"
)

// threadName is a thread's kernel name, and the generation it was read in.
type threadName struct {
	name string
	gen  uint32
}

// name fills each thread's Name from /proc/PID/task/TID/comm, read again
// once a generation.
func (p *Process) name(threads []Thread) {
	if p.pid <= 0 {
		return
	}
	for i := range threads {
		t := &threads[i]
		if t.TID <= 0 {
			continue
		}
		n, ok := p.names[t.TID]
		if !ok || n.gen != p.gen {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", p.pid, t.TID))
			n = threadName{string(bytes.TrimRight(b, "\n")), p.gen}
			if err != nil {
				n.name = ""
			}
			if len(p.names) >= maxThreads {
				clear(p.names)
			}
			p.names[t.TID] = n
		}
		t.Name = n.name
	}
}
