package pystack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Dump is every thread's stack of one process, read once: what pipetop
// stacks prints.
type Dump struct {
	PID int `json:"pid"`
	// Python is the CPython version ("3.11.2"; "3.10" where only the
	// minor version is known).
	Python string `json:"python"`
	// File is the executable or libpython that holds the runtime.
	File    string   `json:"file"`
	Threads []Thread `json:"threads"`
	Drops   Drops    `json:"drops"`
}

// ReadDump attaches to pid and reads its stacks once; a read that meets
// a changing thread list is tried again, up to three times.
func ReadDump(pid int) (*Dump, error) {
	p, err := Attach(pid)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	threads, err := p.Threads()
	for try := 1; try < 3 && errors.Is(err, ErrListChanged); try++ {
		threads, err = p.Threads()
	}
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	for i := range threads {
		if threads[i].Frames == nil {
			threads[i].Frames = []Frame{}
		}
	}
	return &Dump{PID: pid, Python: p.Version().String(), File: p.File(), Threads: threads, Drops: p.Drops()}, nil
}

// WriteText writes d as pipetop stacks prints it: a line for the process,
// then each thread, its frames innermost first.
//
//	Thread 4242 "python3" (holds the GIL), Python id 0x7f1c2a4fe740
//	    spin (plant.py:12)
func (d *Dump) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Process %d: CPython %s (%s)\n", d.PID, d.Python, d.File)
	for _, t := range d.Threads {
		fmt.Fprintf(&b, "\nThread %d", t.TID)
		if t.Name != "" {
			fmt.Fprintf(&b, " %q", t.Name)
		}
		if t.HoldsGIL {
			b.WriteString(" (holds the GIL)")
		}
		fmt.Fprintf(&b, ", Python id %#x\n", t.ID)
		switch {
		case t.Dropped != "":
			fmt.Fprintf(&b, "    (stack dropped: %s, read during a change)\n", t.Dropped)
		case len(t.Frames) == 0:
			b.WriteString("    (no Python frames)\n")
		}
		for _, f := range t.Frames {
			fmt.Fprintf(&b, "    %s (%s:%d)\n", f.Name, f.File, f.Line)
		}
	}
	if n := d.Drops.Total(); n > 0 {
		fmt.Fprintf(&b, "\n%d stack reads dropped (they met the interpreter changing the stack)\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes d as indented JSON (pipetop stacks --json).
func (d *Dump) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}
