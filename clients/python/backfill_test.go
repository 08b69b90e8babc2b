package pypublish_test

import (
	"context"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
)

// backfillScript publishes 25 steps, waits for a viewer, then 5 more.
const backfillScript = `
import sys, time
sys.path.insert(0, sys.argv[1])
from pipetop_publish import Publisher
pub = Publisher("backfill", stages=["forward"])
for i in range(25):
    with pub.stage("forward"):
        pass
    pub.step(samples=1)
while pub.stats()["viewers"] < 1:
    time.sleep(0.01)
time.sleep(0.2)
for i in range(5):
    pub.step(samples=1)
pub.close()
`

// The Go viewer that asks for the backfill gets the Python publisher's
// steps from before it attached in one backfill frame the Go decoder
// takes, then the live ones.
func TestBackfillFromPython(t *testing.T) {
	dir := testkit.SocketDir(t)
	l := startScript(t, dir, backfillScript)
	ep := l.endpoint(t, dir, "backfill")
	time.Sleep(300 * time.Millisecond) // the publisher's flushes take the 25 steps
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.DialView(ctx, ep.Path, ipc.ViewOptions{Backfill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var filled, live []int64
	for {
		f, err := c.Next()
		if err != nil {
			break
		}
		for _, r := range f.Steps {
			switch f.Type {
			case ipc.TypeBackfill:
				filled = append(filled, r.Step)
			case ipc.TypeSteps:
				live = append(live, r.Step)
			}
		}
	}
	if len(filled) != 25 || filled[0] != 0 || filled[24] != 24 {
		t.Errorf("backfill %v, want steps 0..24\n%s", filled, &l.stderr)
	}
	if len(live) != 5 || live[0] != 25 {
		t.Errorf("live steps %v, want 25..29", live)
	}
}
