package tunefile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A tune report of the trainer's own script gives its measured advice; one
// of another script, or no report, none.
func TestMeasured(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, Name)
	write := func(v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	report := map[string]any{"schema": Schema, "command": []string{"python3", "/src/train.py", "--lr", "1"},
		"tuned": "loader", "advice": "num_workers=4", "speed_up": 2.1}
	write(report)
	hello, _ := json.Marshal(map[string]any{"argv": []string{"train.py", "--epochs", "3"}})
	m := Measured(path, ScriptOf(hello))
	if m == nil || m.Advice != "num_workers=4" || m.SpeedUp != 2.1 || m.File != path {
		t.Fatalf("measured %+v", m)
	}
	if m := Measured(path, "other.py"); m != nil {
		t.Errorf("another script's tune: %+v", m)
	}
	report["unconfirmed"] = map[string]any{"setting": "num_workers=0"}
	write(report)
	if m := Measured(path, "train.py"); m != nil {
		t.Errorf("a tune whose best find is unconfirmed: %+v", m)
	}
	delete(report, "unconfirmed")
	report["tuned"] = ""
	write(report)
	if m := Measured(path, "train.py"); m != nil {
		t.Errorf("a tune that tuned nothing: %+v", m)
	}
	os.WriteFile(path, []byte("{"), 0o600)
	if m := Measured(path, "train.py"); m != nil {
		t.Errorf("a broken file: %+v", m)
	}
	if m := Measured(filepath.Join(dir, "none.json"), "train.py"); m != nil {
		t.Errorf("no file: %+v", m)
	}
	if s := ScriptOf(json.RawMessage(`"not an object"`)); s != "" {
		t.Errorf("a config that is no object names script %q", s)
	}
}
