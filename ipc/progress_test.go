package ipc

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// A viewer that accepts progress frames gets the timer's sample; a viewer
// that does not (an older pipetop, socat) never sees one.
func TestProgressGoesOnlyToAcceptingViewers(t *testing.T) {
	tm, err := stage.NewTimer([]string{stage.DataWait, stage.Forward})
	if err != nil {
		t.Fatal(err)
	}
	tm.StartStep(3)
	tm.Begin(0) // stuck in data_wait
	s := newServer(t, ServerOptions{Flush: 5 * time.Millisecond, ProgressEvery: 10 * time.Millisecond, Progress: tm.Progress})
	c := dial(t, s.Path())
	old, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.Write([]byte(`{"type":"hello","v":1,"hello":{"role":"viewer"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	waitViewers(t, s, 2)
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type != TypeProgress {
			continue
		}
		p := f.Progress
		if p.Step != 3 || p.Stage != stage.DataWait || p.SinceNs == 0 || p.Done != 0 {
			t.Fatalf("progress %+v", p)
		}
		break
	}
	s.Publish(&stage.Record{Step: 9, NumStages: 1})
	old.SetReadDeadline(time.Now().Add(5 * time.Second))
	sc := bufio.NewScanner(old)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"progress"`) {
			t.Fatalf("a viewer without accepts got %s", line)
		}
		if strings.Contains(line, `"step":9`) {
			return
		}
	}
	t.Fatalf("no steps frame: %v", sc.Err())
}

// Frames of types this version does not know are skipped, not fatal: a
// later trainer may send them.
func TestUnknownFrameTypesAreSkipped(t *testing.T) {
	path := fakeTrainer(t, func(c net.Conn) {
		c.Write([]byte(`{"type":"hello","v":1,"hello":{"role":"trainer","name":"fake"}}` + "\n"))
		c.Write([]byte(`{"type":"future","future":{"x":1}}` + "\n"))
		c.Write([]byte(`{"type":"event","event":{"t":1,"kind":"epoch"}}` + "\n"))
		time.Sleep(100 * time.Millisecond)
	})
	c := dial(t, path)
	f, err := c.Next()
	if err != nil || f.Type != "future" {
		t.Fatalf("unknown type: %+v, %v", f, err)
	}
	if f, err = c.Next(); err != nil || f.Event == nil || f.Event.Kind != "epoch" {
		t.Fatalf("frame after the unknown one: %+v, %v", f, err)
	}
}
