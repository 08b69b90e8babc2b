package trainer

import (
	"strings"
	"testing"
)

func TestRankFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	r, err := RankFromEnv(env())
	if err != nil || r != Single || r.Distributed() {
		t.Fatalf("no variables: %+v, %v", r, err)
	}
	r, err = RankFromEnv(env("WORLD_SIZE", "4", "RANK", "3", "LOCAL_RANK", "1", "MASTER_ADDR", "h0", "MASTER_PORT", "29500"))
	if err != nil || r != (Rank{Rank: 3, World: 4, LocalRank: 1, MasterAddr: "h0", MasterPort: 29500, Run: "h0:29500"}) {
		t.Fatalf("torchrun variables: %+v, %v", r, err)
	}
	back, err := RankFromEnv(env(strings.Split(strings.Join(r.Env(), "="), "=")...))
	if err != nil || back != r {
		t.Fatalf("Env round trip: %+v, %v", back, err)
	}
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"WORLD_SIZE", "x"}, `WORLD_SIZE="x"`},
		{[]string{"WORLD_SIZE", "2", "RANK", "2", "MASTER_PORT", "1"}, `RANK="2": want an integer in 0..1`},
		{[]string{"WORLD_SIZE", "2", "MASTER_PORT", "1"}, `RANK=""`},
		{[]string{"WORLD_SIZE", "2", "RANK", "0"}, `MASTER_PORT=""`},
		{[]string{"WORLD_SIZE", "2", "RANK", "0", "MASTER_PORT", "70000"}, "MASTER_PORT"},
		{[]string{"WORLD_SIZE", "2", "RANK", "0", "MASTER_PORT", "1", "LOCAL_RANK", "-1"}, "LOCAL_RANK"},
		{[]string{"WORLD_SIZE", "2", "RANK", "0", "MASTER_PORT", "1", "TORCHELASTIC_RUN_ID", strings.Repeat("x", 129)}, "TORCHELASTIC_RUN_ID: 129 bytes"},
	} {
		if _, err := RankFromEnv(env(tc.kv...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RankFromEnv(%v) = %v, want an error with %q", tc.kv, err, tc.want)
		}
	}
}
