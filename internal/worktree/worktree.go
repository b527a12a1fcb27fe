// Package worktree makes the working trees of `agent-sandbox --worktree`
// runs (issue 42 item 4): each run works on a branch of its own, in a
// working tree of its own, isolated from the project's repository and from
// every other run.
//
// A plain `git worktree` would share the project's object store, refs and
// packed-refs with every run (agent A could `git update-ref` B's branch or
// `git gc --prune=now`), and its .git file would point into the project's
// .git/worktrees, which the view's mount at the workdir's path hides.
// Instead each run gets a clone of its own, made here, host-side:
//
//	<store>/<project key>/<branch, '/' as %2F>/
//	  tree/             the working tree; tree/.git a full git directory
//	                    of its own (objects, refs, config written by git
//	                    init with no template: no hooks, no filters)
//	  project-objects   a symlink to the project's .git/objects, named by
//	                    tree/.git/objects/info/alternates: the clone reads
//	                    the project's objects and writes its own
//	  meta.json         branch, project, tree, agent, creation time
//	  lock              held (flock) for the run: one run per tree
//
// The agent is granted tree/ (its workdir) read-write and the project's
// .git/objects read-only; nothing else of the store, nothing of the
// project's working tree and no other run's tree. Git never deletes from
// an alternate, so `git gc --prune=now` in one clone cannot touch the
// project's objects; refs and packed-refs are the clone's own.
//
// The store is $XDG_STATE_HOME/agent-sandbox-worktrees (DefaultRoot), a
// sibling of agent-sandbox's state root, not inside it: the run grants its
// tree writable, and no writable grant may overlap the state root
// (internal/grant). `--worktree-dir DIR` names another store.
//
// Host-side work on the store runs no code of the project: git runs with
// an environment of its own (Env: no system or user configuration, no
// attributes file, no prompts) and `-c core.hooksPath=/dev/null -c
// core.fsmonitor=false`; on the project it only reads (rev-parse), and it
// writes only in the new clone, whose configuration git init wrote and
// which defines no filter (so no LFS either). Directories and files of the
// store are made with *at calls from a descriptor of the store, never
// following a symlink; a tree reused by name (a second run with the same
// NAME) is taken as it is, its .git checked to be a directory and its
// alternates written again, and no git runs in it.
package worktree

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultRoot is the store of the worktree runs for a user whose
// $XDG_STATE_HOME is stateHome.
func DefaultRoot(stateHome string) string {
	return filepath.Join(stateHome, "agent-sandbox-worktrees")
}

// DefaultPrefix starts the branch name a run gets without NAME:
// agent-sandbox/<agent>-<8 hex digits>.
const DefaultPrefix = "agent-sandbox/"

// Layout is where one worktree run lives: every path absolute.
type Layout struct {
	// Project is the workdir the run was started in: the top of a git
	// repository, where the view shows Tree.
	Project string `json:"project"`
	// Branch is the run's branch (refs/heads/Branch in Tree's repository).
	Branch string `json:"branch"`
	// Dir is the run's directory in the store.
	Dir string `json:"dir"`
	// Tree is the working tree (Dir/tree), the run's workdir on the host.
	Tree string `json:"tree"`
	// Objects is the project's object store (Project/.git/objects), read-
	// only for the agent.
	Objects string `json:"objects"`
	// ObjectsLink is the alternate Tree's repository names
	// (Dir/project-objects): on the host a symlink to Objects, in the
	// namespace view a read-only bind of it.
	ObjectsLink string `json:"objects_link"`
	// Exists says that the tree was there already (a NAME used before):
	// the run goes on in it.
	Exists bool `json:"exists"`
}

// Meta is a run's meta.json.
type Meta struct {
	Branch  string    `json:"branch"`
	Project string    `json:"project"`
	Tree    string    `json:"tree"`
	Agent   string    `json:"agent"`
	Created time.Time `json:"created"`
}

// ProjectKey names the project's directory in the store: the workdir's
// base name (for people) and a hash of its path (for uniqueness).
func ProjectKey(project string) string {
	sum := sha256.Sum256([]byte(project))
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(project))
	if len(base) > 32 {
		base = base[:32]
	}
	return base + "-" + hex.EncodeToString(sum[:6])
}

// Plan computes the layout of a worktree run of agent in project (the
// canonical workdir) with the store root; name "" chooses
// agent-sandbox/<agent>-<random>. It reads (never writes) the project's
// .git: the workdir must be the top of a repository whose .git is a
// directory (not a linked worktree's or a submodule's .git file).
func Plan(root, project, name, agent string) (Layout, error) {
	if name == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Layout{}, err
		}
		name = DefaultPrefix + agentPart(agent) + "-" + hex.EncodeToString(b[:])
	}
	if err := CheckName(name); err != nil {
		return Layout{}, err
	}
	if !filepath.IsAbs(root) {
		return Layout{}, fmt.Errorf("--worktree-dir %q: want an absolute path", root)
	}
	root = filepath.Clean(root)
	if within(root, project) || within(project, root) {
		return Layout{}, fmt.Errorf("--worktree-dir %s: the worktree store must lie outside the project %s (and not hold it): the view shows the run's tree in the project's place", root, project)
	}
	dotgit := filepath.Join(project, ".git")
	st, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return Layout{}, fmt.Errorf("--worktree: %s is not the top of a git repository (no %s); run from the repository's top directory or pass --workdir", project, dotgit)
	case !st.IsDir():
		return Layout{}, fmt.Errorf("--worktree: %s is not a directory (a linked worktree or a submodule); run from the main checkout of the repository", dotgit)
	}
	objects := filepath.Join(dotgit, "objects")
	if st, err := os.Lstat(objects); err != nil || !st.IsDir() {
		return Layout{}, fmt.Errorf("--worktree: %s is not a directory; the project's repository has no object store of its own", objects)
	}
	if st, err := os.Lstat(filepath.Join(objects, "info", "alternates")); err == nil && st.Size() > 0 {
		return Layout{}, fmt.Errorf("--worktree: the project's repository borrows objects from another (%s): a worktree run's view shows only the project's own objects; run `git repack -a -d` and remove that file first, or run without --worktree", filepath.Join(objects, "info", "alternates"))
	}
	dir := filepath.Join(root, ProjectKey(project), dirName(name))
	l := Layout{Project: project, Branch: name, Dir: dir, Tree: filepath.Join(dir, "tree"),
		Objects: objects, ObjectsLink: filepath.Join(dir, "project-objects")}
	if st, err := os.Lstat(l.Tree); err == nil && st.IsDir() {
		l.Exists = true
	}
	return l, nil
}

// agentPart is the agent's id as a branch name component.
func agentPart(agent string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, agent)
	if s == "" || strings.HasPrefix(s, "-") {
		s = "agent" + s
	}
	return s
}

func within(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+string(filepath.Separator)) || base == "/"
}

// List returns the worktree runs of project recorded in the store root,
// by creation time.
func List(root, project string) ([]Meta, error) {
	dir := filepath.Join(root, ProjectKey(project))
	repairModes(root, ProjectKey(project))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Meta
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		repairModes(root, ProjectKey(project), e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if err != nil {
			continue
		}
		var m Meta
		if json.Unmarshal(b, &m) != nil || m.Project != project {
			continue
		}
		m.Branch = branchOf(e.Name())
		m.Tree = filepath.Join(dir, e.Name(), "tree")
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}
