package backends

import (
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/sbx"
)

// KeptStatus is how a sandbox kept between runs relates to the current
// configuration.
type KeptStatus string

// The statuses of a kept sandbox (sbx.Current, sbx.Stale, sbx.Unknown).
const (
	// KeptCurrent: the recorded agent, run in the recorded workdir today,
	// gets this very sandbox.
	KeptCurrent = KeptStatus(sbx.Current)
	// KeptStale: it would get another one; nothing attaches to it again.
	KeptStale = KeptStatus(sbx.Stale)
	// KeptUnknown: no record; never removed automatically.
	KeptUnknown = KeptStatus(sbx.Unknown)
)

// Kept is one sandbox a backend keeps between runs (sbx's agent-sandbox-*
// microVMs), as `agents` lists it and `prune` removes it.
type Kept struct {
	// Name is the sandbox name.
	Name   string
	Status KeptStatus
	// Reason says why, in a few words.
	Reason string
}

// KeptRecord is what agent-sandbox recorded of a kept sandbox.
type KeptRecord struct {
	// Agent is the agent id; AgentDir its folder ("" for a built-in one);
	// Workdir the run's working directory.
	Agent, AgentDir, Workdir string
}

// ListKept lists the agent-sandbox-* sandboxes of the sbx program at
// sbxPath.
func ListKept(sbxPath string) ([]string, error) { return sbx.List(sbxPath) }

// ClassifyKept gives each kept sandbox name a status (sbx.Classify):
// current computes the name a record's agent gets today in its workdir.
func ClassifyKept(names []string, stateRoot string, current func(KeptRecord) (string, error)) []Kept {
	listed := sbx.Classify(names, stateRoot, func(r sbx.Record) (string, error) {
		return current(KeptRecord{Agent: r.Agent, AgentDir: r.AgentDir, Workdir: r.Workdir})
	})
	out := make([]Kept, 0, len(listed))
	for _, l := range listed {
		out = append(out, Kept{Name: l.Name, Status: KeptStatus(l.Status), Reason: l.Reason})
	}
	return out
}

// RemoveKept removes the kept sandbox name (`sbx rm -f NAME`) and its
// record.
func RemoveKept(sbxPath, stateRoot, name string) error { return sbx.Remove(sbxPath, stateRoot, name) }

// KeptRecords are the names of the kept sandboxes with a record.
func KeptRecords(stateRoot string) []string { return sbx.Records(stateRoot) }

// ForgetKept deletes the record of the kept sandbox name.
func ForgetKept(stateRoot, name string) error { return sbx.DeleteRecord(stateRoot, name) }

// KeptName is the name of the sandbox a prepared run keeps between runs,
// false for a run that keeps none (every backend but sbx).
func KeptName(p backend.Prepared) (string, bool) {
	if sp, ok := p.(*sbx.Prepared); ok {
		return sp.Name, true
	}
	return "", false
}
