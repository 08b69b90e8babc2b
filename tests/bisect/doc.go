// Package bisect tests pipetop bisect end to end on planted plain PyTorch
// scripts (cmd/pipetop/testdata/bisect, which never import pipetop): each
// phase's samples/s against what the script measures of itself in its
// control modes, the verdict of each planted bottleneck, and the edge
// cases (no DataLoader, a crashing phase, an IterableDataset, DDP ranks,
// Ctrl-C). It reads the machine's CPU, so make test runs it alone, after
// the other packages. In it, TestPlantedBottlenecks stays serial: each
// phase's samples/s is held against the script's own measurement and the
// contention case is judged on threads waiting for a CPU, which a test
// beside it would change. The edge cases call t.Parallel() (the package
// runs with -parallel 4): they check what a bisect does (statuses, phases
// run, files written, processes left), not how fast.
package bisect
