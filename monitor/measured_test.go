package monitor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A tune report of the trainer's own script gives its measured advice; one
// of another script, or no report, none.
func TestReadMeasured(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TuneFile)
	write := func(v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	report := map[string]any{"schema": tuneSchema, "command": []string{"python3", "/src/train.py", "--lr", "1"},
		"tuned": "loader", "advice": "num_workers=4", "speed_up": 2.1}
	write(report)
	m := readMeasured(path, scriptOf(argvConfig([]string{"train.py", "--epochs", "3"})))
	if m == nil || m.Advice != "num_workers=4" || m.SpeedUp != 2.1 || m.File != path {
		t.Fatalf("measured %+v", m)
	}
	if m := readMeasured(path, "other.py"); m != nil {
		t.Errorf("another script's tune: %+v", m)
	}
	report["tuned"] = ""
	write(report)
	if m := readMeasured(path, "train.py"); m != nil {
		t.Errorf("a tune that tuned nothing: %+v", m)
	}
	os.WriteFile(path, []byte("{"), 0o600)
	if m := readMeasured(path, "train.py"); m != nil {
		t.Errorf("a broken file: %+v", m)
	}
	if m := readMeasured(filepath.Join(dir, "none.json"), "train.py"); m != nil {
		t.Errorf("no file: %+v", m)
	}
}
