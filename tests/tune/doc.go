// Package tune tests pipetop tune end to end on planted plain PyTorch
// scripts with a known best setting (cmd/pipetop/testdata/tune, which
// never import pipetop): the setting tune advises is the known best, or
// within 10 % of it when both are run by hand; nothing is tried when the
// network is the bottleneck; the memory guard refuses a trial; and
// pipetop run --apply reproduces the winner's speed. Its six whole tunes
// take 15-20 minutes on 2 cores and read the machine's CPU, so they run
// alone, in make test-tune; make test runs two quick cases: a compute-bound
// script on which nothing is tried (testkit.Serial: its bisect reads the
// CPU) and a Ctrl-C during the bisect (testkit.Concurrent).
package tune
