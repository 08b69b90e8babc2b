// Package bisect tests pipetop bisect end to end on planted plain PyTorch
// scripts (cmd/pipetop/testdata/bisect, which never import pipetop): each
// phase's samples/s against what the script measures of itself in its
// control modes, the verdict of each planted bottleneck, and the edge
// cases (no DataLoader, a crashing phase, an IterableDataset, DDP ranks,
// Ctrl-C). It reads the machine's CPU, so make test runs it alone, after
// the other packages.
package bisect
