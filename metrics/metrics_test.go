package metrics

import "testing"

func TestValueConstructors(t *testing.T) {
	tests := []struct {
		name  string
		v     Value
		state State
		valid bool
		or    float64
	}{
		{"zero value is missing", Value{}, Missing, false, -1},
		{"of", Of(0, "src"), OK, true, 0},
		{"unsupported", Unsupported("src"), NotSupported, false, -1},
		{"failure", Failure("src"), Failed, false, -1},
		{"pending", Pending("src"), Missing, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.v.State != tt.state || tt.v.Valid() != tt.valid || tt.v.Or(-1) != tt.or {
				t.Fatalf("%+v: state %v valid %v or %v", tt.v, tt.v.State, tt.v.Valid(), tt.v.Or(-1))
			}
		})
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Missing: "missing", OK: "ok", NotSupported: "not supported",
		Failed: "failed", State(9): "state(9)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d) = %q, want %q", s, got, want)
		}
	}
}
