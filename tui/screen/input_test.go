package screen

import (
	"io"
	"os"
	"runtime"
	"testing"
)

// pipeInput is an input reading the read end of a pipe whose write end
// the test holds (a terminal stand-in: the cancelable read is the same).
func pipeInput(t *testing.T) (*input, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	in, err := openInput(r)
	if err != nil {
		t.Fatal(err)
	}
	return in, w
}

// passes writes keys to the terminal's end and checks that the screen
// reads them.
func passes(t *testing.T, in *input, w *os.File, keys string) {
	t.Helper()
	if _, err := w.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(keys))
	if _, err := io.ReadFull(in.pr, buf); err != nil || string(buf) != keys {
		t.Fatalf("the screen read %q, %v; want %q", buf, err, keys)
	}
}

// TestInputPassesKeysOn: until the end is marked, what the terminal sends
// reaches the screen's pipe, and close interrupts nothing.
func TestInputPassesKeysOn(t *testing.T) {
	in, w := pipeInput(t)
	passes(t, in, w, "ab\x03")
	if in.close() {
		t.Error("a Ctrl-C the screen read itself also interrupted it at close")
	}
}

// TestInputKeepsKeysForTheNextScreen: the end's mark follows the keys
// passed on; keys read after it go to the next screen, and a Ctrl-C among
// them interrupts the ending one instead of being lost.
func TestInputKeepsKeysForTheNextScreen(t *testing.T) {
	in, w := pipeInput(t)
	passes(t, in, w, "a")
	done := make(chan struct{})
	go func() { in.end(); close(done) }()
	buf := make([]byte, len(endMark))
	if _, err := io.ReadFull(in.pr, buf); err != nil || string(buf) != endMark {
		t.Fatalf("the screen read %q, %v; want the end's mark", buf, err)
	}
	<-done
	if _, err := w.Write([]byte("x\x03y")); err != nil {
		t.Fatal(err)
	}
	for { // the pump reads what was written before close cancels its read
		left.Lock()
		n := len(left.b)
		left.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	if !in.close() {
		t.Error("a Ctrl-C typed after the end was marked did not interrupt the screen")
	}
	next, _ := pipeInput(t)
	buf = make([]byte, 2)
	if _, err := io.ReadFull(next.pr, buf); err != nil || string(buf) != "xy" {
		t.Errorf("the next screen read %q, %v; want the kept keys %q", buf, err, "xy")
	}
	if next.close() {
		t.Error("the next screen was interrupted too")
	}
}
