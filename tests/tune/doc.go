// Package tune tests pipetop tune end to end on planted plain PyTorch
// scripts with a known best setting (cmd/pipetop/testdata/tune, which
// never import pipetop): the setting tune advises is the known best, or
// within 10 % of it when both are run by hand; nothing is tried when the
// network is the bottleneck; the memory guard refuses a trial; and
// pipetop run --apply reproduces the winner's speed. It reads the
// machine's CPU, so make test runs it alone, after the other packages.
package tune
