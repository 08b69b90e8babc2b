package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
)

// TestInside: a trainer whose hello announces a stage word is asked about
// it (ViewOptions.Inside); a reason comes back to it in a second viewer
// hello with the same wishes, and no reason sends none. A trainer without
// a stage word is not asked.
func TestInside(t *testing.T) {
	testkit.Concurrent(t)
	word := &StageWord{Addr: 0x7f0000001000, Stages: []string{"forward"}}
	for _, c := range []struct {
		name   string
		word   *StageWord
		reason string
		asked  bool
	}{
		{"refused", word, "ptrace_scope 3", true},
		{"read from outside", word, "", true},
		{"no stage word", nil, "ptrace_scope 3", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.sock")
			lines := make(chan []Frame, 1)
			testkit.ServeHostile(t, path, func(conn net.Conn) {
				b, _ := json.Marshal(Frame{Type: TypeHello, V: Version, Hello: &Hello{Role: "trainer", Name: "t", PID: 1, StageWord: c.word}})
				conn.Write(append(b, '\n'))
				r := bufio.NewScanner(conn)
				var got []Frame
				for r.Scan() {
					var f Frame
					if json.Unmarshal(r.Bytes(), &f) == nil {
						got = append(got, f)
					}
				}
				lines <- got
			})
			asked := false
			conn, err := DialView(context.Background(), path, ViewOptions{Aggregates: true, Inside: func(h Hello) string {
				asked = h.StageWord != nil && h.StageWord.Addr == word.Addr
				return c.reason
			}})
			if err != nil {
				t.Fatal(err)
			}
			conn.Close()
			got := <-lines
			if asked != c.asked {
				t.Errorf("asked %v, want %v", asked, c.asked)
			}
			want := 1
			if c.asked && c.reason != "" {
				want = 2
			}
			if len(got) != want {
				t.Fatalf("the trainer got %d hellos, want %d: %+v", len(got), want, got)
			}
			last := got[len(got)-1].Hello
			if want == 2 && (last.StacksInside != c.reason || !last.Accepting(TypeAgg)) {
				t.Errorf("second hello %+v: want stacks_inside %q and the same accepts", last, c.reason)
			}
			if got[0].Hello.StacksInside != "" {
				t.Errorf("the first hello asks for stacks inside: %+v", got[0].Hello)
			}
		})
	}
}
