package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/broker"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// showLog is `agent-sandbox log [--json] [-n N] [AGENT]`: the egress
// broker's recent decisions from the audit log
// ($XDG_STATE_HOME/agent-sandbox/audit/<id>.jsonl), oldest first. AGENT may
// be a name or a folder path; its id is the folder's name.
func showLog(e env, l cli.Log) int {
	dir := filepath.Join(e.home.StateRoot(), spec.AuditDirName)
	id := l.Agent
	if strings.Contains(id, "/") {
		id = filepath.Base(filepath.Clean(id))
	}
	entries, err := broker.ReadAudit(dir, id, l.N)
	if err != nil {
		return fail(e.stdio.Err, fmt.Errorf("reading the audit log in %s: %v", dir, err))
	}
	if err := broker.WriteLog(e.stdio.Out, entries, l.JSON); err != nil {
		return fail(e.stdio.Err, err)
	}
	return 0
}
