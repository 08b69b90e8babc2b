package tui

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/tui/styles"
)

// FuzzFrames feeds arbitrary frame streams (whatever the decoder accepts)
// into the feed and renders the result: no input may panic the view or
// break its size.
func FuzzFrames(f *testing.F) {
	f.Add([]byte(`{"type":"steps","steps":[{"step":1,"t0":5,"t1":10,"n":2,"cpu":[1,2,2],"gpu":[-1,3,0]}]}`))
	f.Add([]byte(`{"type":"stages","stages":["x"]}` + "\n" + `{"type":"steps","steps":[{"step":1,"t0":0,"t1":0,"n":0,"cpu":[9,9,9,9]}]}`))
	f.Add([]byte(`{"type":"loader","loader":{"workers":-1,"read_amp":1e308,"queue_cap":-5}}`))
	f.Add([]byte(`{"type":"event","event":{"kind":"` + "\x1b[31m" + `","msg":"` + "\u200b\t\r" + `"}}`))
	for _, rec := range recordings {
		_, frames := loadFrames(f, rec.name)
		var b bytes.Buffer
		for _, fr := range frames[:min(3, len(frames))] {
			b.Write(mustJSON(fr))
			b.WriteByte('\n')
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fd := feed.New(64)
		now := time.Unix(1_800_000_000, 0)
		hello := &ipc.Hello{Name: "fuzz", PID: 1, Stages: []string{"data_wait", "forward", "other"}}
		fd.Apply(ipc.Message{Connected: hello}, now)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, ipc.MaxFrame)
		for sc.Scan() {
			fr, err := ipc.DecodeFrame(sc.Bytes())
			if err != nil || fr.Type == ipc.TypeHello {
				continue
			}
			fd.Apply(ipc.Message{Frame: fr}, now)
		}
		col := monitor.NewSnapshotter(fd, fakeSources(3, 1)...)
		snap := col.Snapshot(now, monitor.Windows[3])
		m := New(Options{Snapshotter: col, Styles: styles.New(true)})
		m.SetSnapshot(&snap)
		for _, sz := range [][2]int{{40, 12}, {80, 24}, {20, 5}} {
			checkSize(t, m.Render(sz[0], sz[1]), sz[0], sz[1])
		}
	})
}
