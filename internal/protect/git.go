package protect

import (
	"os"
	"path/filepath"

	"github.com/agent-sandbox/agent-sandbox/internal/gitconfig"
)

// gitLedger adds the git metadata of a run to a ledger.
type gitLedger struct {
	in  Input
	add func(Entry)
	// top is the working tree's top (the workdir, or Input.RepoTop).
	top string
	// read are the config files already read (includes can loop).
	read map[string]bool
}

// gitDir adds a git directory's config, config.worktree, commondir and
// (with hooks) hooks, what their configuration names, and the same for
// its submodules' and worktrees' git dirs.
func (g *gitLedger) gitDir(dir string, hooks bool) {
	g.meta(dir, hooks)
	for _, sub := range nestedGitDirs(dir) {
		if sub.module {
			g.meta(sub.dir, true)
		} else {
			g.worktreeDir(sub.dir)
		}
	}
}

// meta adds one git dir's own files.
func (g *gitLedger) meta(dir string, hooks bool) {
	g.config(filepath.Join(dir, "config"), "git runs the commands its settings name (core.fsmonitor, hooks, filters...)")
	g.config(filepath.Join(dir, "config.worktree"), "git runs the commands its settings name (core.fsmonitor, hooks, filters...)")
	g.commondir(dir)
	if hooks {
		hp := filepath.Join(dir, "hooks")
		g.add(Entry{Path: hp, Name: GitHooks, Dir: true, Why: "git runs its hooks", Guard: ReadOnly})
		g.hookLinks(hp)
	}
}

// worktreeDir adds a linked worktree's git dir: its own config.worktree
// and commondir (which names the repository whose config applies).
func (g *gitLedger) worktreeDir(dir string) {
	g.config(filepath.Join(dir, "config.worktree"), "git runs the commands its settings name (core.fsmonitor, hooks, filters...)")
	g.commondir(dir)
}

// commondir adds a git dir's commondir file, which points git at another
// repository's config and hooks: read-only, and a missing one is created
// holding "." (the git dir itself: what git does without one), so that the
// agent cannot create one pointing elsewhere.
func (g *gitLedger) commondir(dir string) {
	g.add(Entry{Path: filepath.Join(dir, "commondir"), Name: GitConfig, Why: "points git at another repository's config and hooks", Guard: ReadOnly})
}

// config adds a git configuration file of the repository (read-only, a
// missing one created empty) and what it names.
func (g *gitLedger) config(path, why string) {
	g.add(Entry{Path: path, Name: GitConfig, Why: why, Guard: ReadOnly, Format: FormatGit})
	g.refs(path, 0)
}

// userConfig adds what the user's and the system's git configuration
// name inside the writable grants: a relative core.hooksPath there is
// the project's own, and an included file can lie anywhere.
func (g *gitLedger) userConfig() {
	for _, p := range g.in.UserGitConfig {
		g.refs(p, 0)
	}
}

// maxIncludeDepth is git's own bound on nested includes.
const maxIncludeDepth = 10

// refs adds the files the git configuration file at path makes git use
// from elsewhere: the directory core.hooksPath names (a relative one is
// the working tree's, the workdir), with the scripts its hooks link to,
// and included configuration (include.path, includeIf.*.path, relative to
// the including file), read in turn. Whether they exist or not: the agent
// must not create them either.
func (g *gitLedger) refs(path string, depth int) {
	if depth > maxIncludeDepth || g.read[path] {
		return
	}
	if g.read == nil {
		g.read = map[string]bool{}
	}
	g.read[path] = true
	entries, err := gitconfig.ReadFile(path, maxConfigSize)
	if err != nil {
		// git refuses the whole file, and so runs nothing from it;
		// what it would name is unknown.
		return
	}
	for _, e := range entries {
		switch {
		case e.Section == "core" && !e.HasSub && e.Key == "hookspath" && !e.NoValue:
			hp, err := gitconfig.ExpandPath(e.Value, g.top, g.in.Home)
			if err != nil || hp == "" {
				continue
			}
			g.add(Entry{Path: hp, Name: GitHooks, Dir: true, Why: "core.hooksPath in " + path + ": git runs the hooks there", Guard: ReadOnly})
			g.hookLinks(hp)
		case (e.Section == "include" && !e.HasSub || e.Section == "includeif" && e.HasSub) && e.Key == "path" && !e.NoValue:
			inc, err := gitconfig.ExpandPath(e.Value, filepath.Dir(path), g.in.Home)
			if err != nil || inc == "" {
				continue
			}
			g.add(Entry{Path: inc, Name: GitConfig, Why: "included by " + path + ": git runs the commands its settings name", Guard: ReadOnly, Format: FormatGit})
			g.refs(inc, depth+1)
		}
	}
}

// maxConfigSize bounds the git configuration files read.
const maxConfigSize = 1 << 20

// hookLinks adds what the symlinks in a hooks directory point at: a hook
// linked to a script in the project runs that script. A missing one is
// created empty and not executable: git passes over a hook it cannot
// execute, as it did while the script was missing.
func (g *gitLedger) hookLinks(hooks string) {
	ents, err := os.ReadDir(hooks)
	if err != nil {
		return
	}
	for i, e := range ents {
		if i >= maxNested || e.Type()&os.ModeSymlink == 0 {
			continue
		}
		t, err := os.Readlink(filepath.Join(hooks, e.Name()))
		if err != nil {
			continue
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(hooks, t)
		}
		g.add(Entry{Path: t, Name: GitHooks, Why: "git runs it as the hook " + filepath.Join(hooks, e.Name()), Guard: ReadOnly})
	}
}

// maxNested bounds the submodule and worktree git dirs looked at, and the
// entries of a hooks directory.
const maxNested = 256

// nestedDir is a git dir below another: a submodule's or a worktree's.
type nestedDir struct {
	dir    string
	module bool
}

// SubmoduleGitDirs are the git dirs of the submodules below git dir g
// (modules/<name>, nested names and submodules of submodules included)
// that exist now.
func SubmoduleGitDirs(g string) []string {
	var out []string
	for _, d := range nestedGitDirs(g) {
		if d.module {
			out = append(out, d.dir)
		}
	}
	return out
}

// nestedGitDirs are the git dirs of submodules (modules/<name>..., nested)
// and of linked worktrees (worktrees/<name>) below git dir g that exist
// now: each holds a HEAD.
func nestedGitDirs(g string) []nestedDir {
	var out []nestedDir
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > 4 || len(out) >= maxNested {
			return
		}
		for _, kind := range []string{"modules", "worktrees"} {
			ents, err := os.ReadDir(filepath.Join(dir, kind))
			if err != nil {
				continue
			}
			for _, e := range ents {
				if !e.IsDir() || len(out) >= maxNested {
					continue
				}
				sub := filepath.Join(dir, kind, e.Name())
				if _, err := os.Lstat(filepath.Join(sub, "HEAD")); err == nil {
					out = append(out, nestedDir{sub, kind == "modules"})
					walk(sub, depth+1)
				} else if kind == "modules" {
					// A submodule named a/b lives at modules/a/b.
					walk(sub, depth+1)
				}
			}
		}
	}
	walk(g, 0)
	return out
}

// UserGitConfigs are the configuration files git reads besides the
// repository's, in its order: the system's (/etc/gitconfig), then the
// user's ($XDG_CONFIG_HOME/git/config, ~/.gitconfig), those that exist.
// getenv reads GIT_CONFIG_SYSTEM, GIT_CONFIG_GLOBAL, GIT_CONFIG_NOSYSTEM
// and XDG_CONFIG_HOME, as git does.
func UserGitConfigs(home string, getenv func(string) string) []string {
	var out []string
	exists := func(p string) {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	if getenv("GIT_CONFIG_NOSYSTEM") == "" {
		if p := getenv("GIT_CONFIG_SYSTEM"); p != "" {
			exists(p)
		} else {
			exists("/etc/gitconfig")
		}
	}
	if p := getenv("GIT_CONFIG_GLOBAL"); p != "" {
		exists(p)
		return out
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" || !filepath.IsAbs(xdg) {
		xdg = filepath.Join(home, ".config")
	}
	exists(filepath.Join(xdg, "git", "config"))
	exists(filepath.Join(home, ".gitconfig"))
	return out
}
