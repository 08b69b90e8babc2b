package torch

import (
	"os"
	"testing"
)

// TestPassiveOpenMP: the shim's OpenMP threads sleep between parallel
// regions unless the user chose otherwise.
func TestPassiveOpenMP(t *testing.T) {
	t.Setenv(WaitPolicyEnv, "")
	os.Unsetenv(WaitPolicyEnv)
	if err := passiveOpenMP(); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv(WaitPolicyEnv); got != "PASSIVE" {
		t.Errorf("unset %s became %q, want PASSIVE", WaitPolicyEnv, got)
	}
	t.Setenv(WaitPolicyEnv, "ACTIVE")
	if err := passiveOpenMP(); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv(WaitPolicyEnv); got != "ACTIVE" {
		t.Errorf("the user's %s=ACTIVE became %q", WaitPolicyEnv, got)
	}
}
