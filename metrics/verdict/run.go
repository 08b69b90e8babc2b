package verdict

// Run is what one refresh of a viewer judges.
type Run struct {
	// Shown is the shown trainer's inputs, with every rank's summary in
	// Ranks for a run of several; nil when there is nothing to judge
	// (before the trainer's hello).
	Shown *Inputs
	// Own are the inputs of the ranks judged on their own as well, by
	// index in the viewer's ranks; a nil entry is a rank without a verdict
	// of its own (before its hello, or shown in brief).
	Own []*Inputs
}

// Judgement is a refresh's verdicts, as Run asked for them.
type Judgement struct {
	// Shown is the verdict of Run.Shown; nil when it was nil.
	Shown *Verdict
	// Own are the verdicts of Run.Own, by the same index; nil entries
	// where Run.Own had nil.
	Own []*Verdict
}

// JudgeRun judges one refresh: the run the viewer shows and each rank
// that is judged on its own, every one by Judge, exactly once. It is the
// one call a viewer makes a refresh, so the screen, --json and the
// exporter all show the verdicts of the same judgement.
func JudgeRun(r Run) Judgement {
	var j Judgement
	if r.Shown != nil {
		v := Judge(*r.Shown)
		j.Shown = &v
	}
	if r.Own != nil {
		j.Own = make([]*Verdict, len(r.Own))
	}
	for i, in := range r.Own {
		if in != nil {
			v := Judge(*in)
			j.Own[i] = &v
		}
	}
	return j
}
