package plan

import (
	"errors"
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Worktree is the plan's "worktree" (null for a run without --worktree):
// the run's tree, branch, and what is mounted where.
type Worktree struct {
	// Branch is the run's branch, in Tree's own repository.
	Branch string `json:"branch"`
	// Tree is the run's working tree on the host (its workdir).
	Tree string `json:"tree"`
	// Project is the workdir the run was started in.
	Project string `json:"project"`
	// AgentSees is where the agent finds the tree: Project in the
	// namespace view, Tree where the engine has no mounts.
	AgentSees string `json:"agent_sees"`
	// Objects is the project's object store, read-only for the agent;
	// ObjectsLink the path the tree's alternates name (where the view
	// binds Objects).
	Objects     string `json:"objects"`
	ObjectsLink string `json:"objects_link"`
	// Exists says the tree is there from an earlier run with this NAME.
	Exists bool `json:"exists"`
	// Mounts say what is placed where, one line each.
	Mounts []string `json:"mounts"`
	// line is what a real run prints (WorktreeLine).
	line string
}

// WorktreeInput is Input.Worktree: the layout internal/worktree computed.
type WorktreeInput struct {
	spec.Worktree
	// Tree is the run's tree (Input.Workdir is set to it too).
	Tree string
	// Store is the worktree store the tree lies in, which holds every
	// other worktree run's tree too: no grant but the tree reaches it.
	Store string
	// Exists: the tree is there already.
	Exists bool
}

// WorktreeRefusal says why a worktree run cannot use the posture pst (nil
// when it can): sbx runs the agent in a microVM with a copy of the
// workdir of its own.
func WorktreeRefusal(pst posture.Posture) error {
	if pst.Sandboxed && pst.Backend == posture.Sbx {
		return errors.New("--worktree is not supported with the sbx backend (the microVM keeps a copy of the workdir of its own, not the run's tree); use --sandbox-backend landlock or nono")
	}
	return nil
}

// worktree applies --worktree: the project's objects are granted
// read-only, and no other grant may reach the project's directory (its
// working tree is not the run's: the tree is).
func (sb *specBuilder) worktree() error {
	w := sb.in.Worktree
	if w == nil {
		return nil
	}
	if err := WorktreeRefusal(sb.pst); err != nil {
		return err
	}
	objects := grant.Canonical(w.Objects)
	if err := sb.g.checker.Check(objects, false); err != nil {
		return fmt.Errorf("--worktree: the project's objects %s %v", objects, err)
	}
	for _, l := range []struct {
		what     string
		paths    []string
		writable bool
	}{{"read-only", sb.s.Read, false}, {"read-write", sb.s.Allow, true}, {"write-only", sb.s.Write, true}} {
		for _, p := range l.paths {
			switch {
			case w.Store != "" && grant.Overlaps(p, grant.Canonical(w.Store)) && !grant.Within(p, sb.s.Workdir):
				return fmt.Errorf("--worktree: the %s grant %s reaches the worktree store %s, which holds the trees of other worktree runs; drop the grant (the run's own tree %s is its workdir)", l.what, p, w.Store, sb.s.Workdir)
			case grant.Within(p, w.At), l.writable && grant.Within(w.At, p):
				return fmt.Errorf("--worktree: the %s grant %s reaches the project %s, whose files a worktree run must not touch (it works in %s); drop the grant or run without --worktree", l.what, p, w.At, sb.s.Workdir)
			case grant.Within(w.At, p):
				sb.warns = append(sb.warns, fmt.Sprintf("--worktree: the read-only grant %s holds the project %s: engines without mounts show the agent the project's files there (read-only); the namespace view hides them under the tree", p, w.At))
			}
		}
	}
	sb.g.add(&sb.s.Read, objects)
	wt := w.Worktree
	wt.Objects = objects
	sb.s.Worktree = &wt
	return nil
}

// SharedTemp are the directories nono alone lets every agent write by its
// own rules (its group system_write_linux), whatever the profile
// agent-sandbox writes says.
var SharedTemp = []string{"/tmp"}

// worktreeEngineRefusal refuses a worktree store in SharedTemp on a host
// where runs have no view (nono alone, the weaker sandbox): there any
// nono-alone run (a worktree run or not, of any project) could write the
// other runs' trees (their .git/config and hooks too, unguarded between
// runs), their meta.json and the project-objects link their alternates
// name. Where the view can be built nono runs inside it, with a private
// /tmp.
func worktreeEngineRefusal(in *WorktreeInput, id engine.ID) error {
	if in == nil || in.Store == "" || (id != engine.Nono && id != engine.Weaker) {
		return nil
	}
	store := grant.Canonical(in.Store)
	for _, d := range SharedTemp {
		for _, w := range []string{d, grant.Canonical(d)} {
			if grant.Within(store, w) || grant.Within(in.Store, w) {
				return fmt.Errorf("--worktree: the worktree store %s lies in %s, which nono alone lets every agent write (its group system_write_linux) on a host without the namespace view: any run could write this run's tree and the store's records; choose a store outside it with --worktree-dir DIR or AGENT_SANDBOX_WORKTREE_DIR (the default is $XDG_STATE_HOME/agent-sandbox-worktrees)", in.Store, d)
			}
		}
	}
	return nil
}

// worktreeStep is the plan's "worktree" for the run's input and engine.
func worktreeStep(in *WorktreeInput, sandboxed bool, id engine.ID) *Worktree {
	if in == nil {
		return nil
	}
	w := &Worktree{Branch: in.Branch, Tree: in.Tree, Project: in.At, AgentSees: in.Tree,
		Objects: in.Objects, ObjectsLink: in.ObjectsLink, Exists: in.Exists}
	switch {
	case !sandboxed:
		w.Mounts = []string{fmt.Sprintf("no sandbox: the agent runs in %s with your full rights", in.Tree)}
		w.line = fmt.Sprintf("worktree run on branch %s: the agent runs at the tree's real path %s (unsandboxed)", in.Branch, in.Tree)
	case id == engine.View:
		w.AgentSees = in.At
		w.line = fmt.Sprintf("worktree run on branch %s: the tree %s is shown at %s", in.Branch, in.Tree, in.At)
		w.Mounts = []string{
			fmt.Sprintf("%s read-write at %s (and at its own path), the project's files hidden below it", in.Tree, in.At),
			fmt.Sprintf("%s read-only at %s (the tree's alternates)", in.Objects, in.ObjectsLink),
		}
	case id == engine.NonoInView:
		// The view shows the tree at the project's path too, but nono
		// starts the agent in its --workdir, the tree's real path.
		w.line = fmt.Sprintf("worktree run on branch %s: the agent runs at the tree's real path %s (nono starts it there; the view shows the tree at %s too)", in.Branch, in.Tree, in.At)
		w.Mounts = []string{
			fmt.Sprintf("%s read-write at %s and at its own path, the project's files hidden below it; nono starts the agent at the tree's real path %s", in.Tree, in.At, in.Tree),
			fmt.Sprintf("%s read-only at %s (the tree's alternates)", in.Objects, in.ObjectsLink),
		}
	default:
		w.line = fmt.Sprintf("worktree run on branch %s: the agent runs at the tree's real path %s (this engine has no mounts to show it at %s)", in.Branch, in.Tree, in.At)
		w.Mounts = []string{
			fmt.Sprintf("no mounts in this engine: the agent runs at the tree's real path %s, not at %s", in.Tree, in.At),
			fmt.Sprintf("%s read-only (reached through the symlink %s, the tree's alternates)", in.Objects, in.ObjectsLink),
		}
	}
	return w
}

// WorktreeLine is the one line a real worktree run prints before the
// agent starts: where the agent works, and on which branch.
func (p *Plan) WorktreeLine() string {
	if p.Worktree == nil {
		return ""
	}
	return p.Worktree.line
}
