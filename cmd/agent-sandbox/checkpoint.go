package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/checkpoint"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
)

// checkpointSettings are the store's settings from the environment:
// AGENT_SANDBOX_CHECKPOINT_MAX_SIZE (one checkpoint), _STORE_MAX (one
// workdir's store), _KEEP (age: a Go duration or N days as "Nd").
func checkpointSettings(getenv func(string) string) (checkpoint.Settings, error) {
	var s checkpoint.Settings
	for _, v := range []struct {
		name string
		to   *int64
	}{{"AGENT_SANDBOX_CHECKPOINT_MAX_SIZE", &s.MaxBytes}, {"AGENT_SANDBOX_CHECKPOINT_STORE_MAX", &s.StoreMax}} {
		if val := getenv(v.name); val != "" {
			n, err := agent.ParseSize(val)
			if err != nil || n <= 0 {
				return s, fmt.Errorf("%s=%q: want a size such as 512M or 4G", v.name, val)
			}
			*v.to = n
		}
	}
	if val := getenv("AGENT_SANDBOX_CHECKPOINT_KEEP"); val != "" {
		d, err := time.ParseDuration(val)
		if days, ok := strings.CutSuffix(val, "d"); ok {
			var n int
			n, err = strconv.Atoi(days)
			d = time.Duration(n) * 24 * time.Hour
		}
		if err != nil || d <= 0 {
			return s, fmt.Errorf("AGENT_SANDBOX_CHECKPOINT_KEEP=%q: want an age such as 14d or 72h", val)
		}
		s.KeepAge = d
	}
	return s, nil
}

// checkpointMode is the run's: --checkpoint, else the folder's checkpoint
// key, else on for an agent and off for run --.
func checkpointMode(r cli.Run, folder *agent.Folder) string {
	switch {
	case r.Checkpoint != "":
		return r.Checkpoint
	case folder != nil && folder.Config != nil && folder.Config.Checkpoint != "":
		return folder.Config.Checkpoint
	case r.Program != "":
		return checkpoint.ModeOff
	}
	return checkpoint.ModeOn
}

// beginCheckpoint marks the run live in workdir and takes its checkpoint.
func beginCheckpoint(e env, r cli.Run, folder *agent.Folder, workdir string) (*checkpoint.Active, error) {
	set, err := checkpointSettings(e.getenv)
	if err != nil {
		return nil, err
	}
	name := r.Agent
	if r.Program != "" {
		name = r.Program
	}
	return checkpoint.Begin(checkpoint.BeginOptions{
		StateRoot: e.home.StateRoot(), Workdir: workdir, Command: name,
		Mode: checkpointMode(r, folder), Settings: set, Warn: e.stdio.Err, Verbose: r.Verbose,
	})
}

// checkpointCommand is `agent-sandbox runs`, `diff` and `undo`.
func checkpointCommand(e env, cmd string, c cli.Checkpoint) int {
	workdir, err := resolveWorkdir(c.Workdir)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	set, err := checkpointSettings(e.getenv)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	root := e.home.StateRoot()
	if cmd == cli.CmdUndo {
		confirm := func() bool { return c.Yes }
		if !c.Yes && launch.IsTerminal(os.Stdin) && launch.IsTerminal(e.stdio.Out) {
			confirm = func() bool {
				fmt.Fprint(e.stdio.Out, "put the workdir back? [y/N] ")
				line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
				return strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
			}
		}
		if err := checkpoint.Undo(root, workdir, set, checkpoint.UndoOptions{Run: c.Run, Confirm: confirm, Out: e.stdio.Out, Err: e.stdio.Err}); err != nil {
			return fail(e.stdio.Err, err)
		}
		return 0
	}
	if cmd == cli.CmdRuns {
		if err := listWorktrees(e, workdir, e.stdio.Out); err != nil {
			return fail(e.stdio.Err, err)
		}
	}
	if _, err := os.Stat(checkpoint.StoreDir(root, workdir)); err != nil {
		fmt.Fprintf(e.stdio.Out, "no runs recorded for %s\n", workdir)
		return 0
	}
	s, err := checkpoint.Open(root, workdir, set)
	if err == nil {
		if cmd == cli.CmdRuns {
			err = s.ListRuns(e.stdio.Out, e.stdio.Err)
		} else {
			err = s.ShowDiff(c.Run, e.stdio.Out)
		}
	}
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	return 0
}
