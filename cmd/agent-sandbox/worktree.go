package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/worktree"
)

// worktreeRoot is the store of worktree runs: --worktree-dir, else
// $AGENT_SANDBOX_WORKTREE_DIR, else $XDG_STATE_HOME/agent-sandbox-worktrees.
func worktreeRoot(e env, flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = e.getenv("AGENT_SANDBOX_WORKTREE_DIR")
	}
	if dir == "" {
		return worktree.DefaultRoot(e.home.XDGStateHome), nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--worktree-dir %q: %v", dir, err)
	}
	return abs, nil
}

// startWorktree lays out the run's tree for --worktree and, for a real
// run, makes it (or takes the one of a NAME used before) and holds it;
// held is nil for --dry-run.
func startWorktree(e env, r cli.Run, folder *agent.Folder, pst posture.Posture, workdir string) (*worktree.Held, *plan.WorktreeInput, error) {
	if err := plan.WorktreeRefusal(pst); err != nil {
		return nil, nil, err
	}
	root, err := worktreeRoot(e, r.WorktreeDir)
	if err != nil {
		return nil, nil, err
	}
	l, err := worktree.Plan(root, workdir, r.WorktreeName, folder.ID)
	if err != nil {
		return nil, nil, err
	}
	var held *worktree.Held
	if !r.DryRun {
		git, err := e.lookPath("git")
		if err != nil {
			return nil, nil, errors.New("--worktree needs git on PATH (to make the run's clone)")
		}
		if held, err = worktree.Create(l, git, folder.ID); err != nil {
			return nil, nil, err
		}
	}
	in := &plan.WorktreeInput{Tree: l.Tree, Store: root, Exists: l.Exists}
	in.Branch, in.At, in.Objects, in.ObjectsLink = l.Branch, l.Project, l.Objects, l.ObjectsLink
	return held, in, nil
}

// listWorktrees prints the worktree runs of workdir (for `runs`): each
// one's branch and tree, and how to merge it.
func listWorktrees(e env, workdir string, out io.Writer) error {
	root, err := worktreeRoot(e, "")
	if err != nil {
		return err
	}
	ms, err := worktree.List(root, workdir)
	if err != nil || len(ms) == 0 {
		return err
	}
	fmt.Fprintf(out, "worktree runs (merge one with: git fetch TREE BRANCH:BRANCH, see docs/worktree.md):\n")
	for _, m := range ms {
		state := ""
		if _, err := os.Lstat(m.Tree); err != nil {
			state = " (tree removed)"
		}
		fmt.Fprintf(out, "  %s  branch %s  tree %s  agent %s%s\n", m.Created.Local().Format("2006-01-02 15:04"), m.Branch, m.Tree, m.Agent, state)
	}
	return nil
}
