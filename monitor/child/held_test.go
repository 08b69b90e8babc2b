package child

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestHeldWriter(t *testing.T) {
	var dst bytes.Buffer
	h := NewHeld(&dst)
	fmt.Fprint(h, "before ")
	h.Hold()
	fmt.Fprint(h, "during ")
	if dst.String() != "before " {
		t.Fatalf("output while held reached the terminal: %q", dst.String())
	}
	h.Release()
	fmt.Fprint(h, "after")
	if dst.String() != "before during after" {
		t.Errorf("got %q", dst.String())
	}
	h.Hold()
	big := bytes.Repeat([]byte("x"), heldMax+10)
	_, _ = h.Write(big)
	dst.Reset()
	h.Release()
	if !strings.Contains(dst.String(), "10 bytes of the command's output were dropped") || strings.Count(dst.String(), "x") != heldMax {
		t.Errorf("overflow: %d bytes, %q...", dst.Len(), dst.String()[:80])
	}
}
