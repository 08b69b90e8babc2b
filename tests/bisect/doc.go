// Package bisect tests pipetop bisect end to end on planted plain PyTorch
// scripts (cmd/pipetop/testdata/bisect, which never import pipetop): each
// phase's samples/s against what the script measures of itself in its
// control modes, the verdict of each planted bottleneck, and the edge
// cases (no DataLoader, a crashing phase, an IterableDataset, DDP ranks,
// Ctrl-C). TestPlantedBottlenecks reads the machine's CPU (each phase's
// samples/s against the script's own measurement; the contention case is
// judged on threads waiting for a CPU), so it runs alone, after every other
// package's tests (testkit.Serial). The edge cases check what a bisect does
// (statuses, phases run, files written, processes left), not how fast: they
// run in parallel, beside the other packages (testkit.Concurrent).
package bisect
