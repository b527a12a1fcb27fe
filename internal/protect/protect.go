// Package protect lists the paths inside a run's writable grants that make
// the user's own tools run code on the host later: git's configuration and
// hooks (in the workdir's .git, a linked worktree's git dir and its common
// dir, submodules' git dirs), editor tasks (.vscode, .idea), agent settings
// and commands (.claude, .codex, .mcp.json), direnv's .envrc and
// .gitmodules. An agent that writes one of them plants code that the
// user's next `git status`, folder open or `cd` runs outside the sandbox.
//
// The built-in engine keeps them read-only (including their first creation:
// see internal/backend/landlock); nono and sbx cannot, and say so. A user
// whose agent must edit some of them names them in agent.toml's allow_edit
// or with --allow-edit. The package is pure apart from reading directory
// entries of the git directories.
package protect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Path is one protected path of a run.
type Path struct {
	// Path is absolute and clean.
	Path string `json:"path"`
	// Name is what allow_edit and --allow-edit call it (one of Names).
	Name string `json:"name"`
	// Dir says whether it is (or, missing, is created as) a directory.
	Dir bool `json:"dir"`
	// Optional paths are protected only when they exist: creating an
	// empty one would change what git does (a commondir file, a hooks
	// directory named by core.hooksPath, the script a hook links to).
	Optional bool `json:"optional,omitempty"`
}

// The names of git metadata, wherever the git directory lies.
const (
	// GitConfig covers config and config.worktree of every git dir.
	GitConfig = ".git/config"
	// GitHooks covers hooks/ of every git dir.
	GitHooks = ".git/hooks"
	// GitFile is the workdir's .git when it is a file ("gitdir: ..."):
	// rewritten, it points the user's git at a directory the agent made.
	GitFile = ".git"
)

// project are the names below the working directory, and whether each is
// a directory.
var project = []struct {
	name string
	dir  bool
}{
	{".vscode", true}, {".idea", true}, {".codex", true},
	{".claude/settings.json", false}, {".claude/settings.local.json", false},
	{".claude/commands", true}, {".claude/agents", true},
	{".mcp.json", false}, {".gitmodules", false}, {".envrc", false},
}

// Names are the names allow_edit and --allow-edit accept, sorted.
func Names() []string {
	out := []string{GitFile, GitConfig, GitHooks}
	for _, p := range project {
		out = append(out, p.name)
	}
	sort.Strings(out)
	return out
}

// CheckNames refuses a name that is not one of Names. where names the
// source in the error ("agent.toml: allow_edit", "--allow-edit").
func CheckNames(where string, names []string) error {
	known := map[string]bool{}
	for _, n := range Names() {
		known[n] = true
	}
	for i, n := range names {
		c := strings.TrimSuffix(strings.TrimPrefix(n, "./"), "/")
		if !known[c] {
			return fmt.Errorf("%s[%d]: %q is not a protected path; name one of %s (relative to the working directory; %s and %s cover every git directory of the run)", where, i, n, strings.Join(Names(), ", "), GitConfig, GitHooks)
		}
	}
	return nil
}

// Normalize returns names cleaned as CheckNames accepts them.
func Normalize(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(n, "./"), "/"))
	}
	return out
}

// For lists the protected paths of a run in workdir whose linked git
// directories are gitDir (a worktree's or submodule's, "" for none) and
// commonDir (a worktree's main repository's .git, "" for none), leaving out
// the names in allow. It reads the workdir's .git (a directory or a file)
// and the submodule and worktree entries below each git dir.
func For(workdir, gitDir, commonDir string, allow []string) []Path {
	allowed := map[string]bool{}
	for _, a := range Normalize(allow) {
		allowed[a] = true
	}
	var out []Path
	addPath := func(p Path) {
		if !allowed[p.Name] {
			p.Path = filepath.Clean(p.Path)
			out = append(out, p)
		}
	}
	add := func(p, name string, dir bool) { addPath(Path{Path: p, Name: name, Dir: dir}) }
	// hookLinks protects what the symlinks in a hooks directory point
	// at: a hook linked to a script in the project runs that script.
	hookLinks := func(hooks string) {
		ents, err := os.ReadDir(hooks)
		if err != nil {
			return
		}
		for i, e := range ents {
			if i >= maxNested || e.Type()&os.ModeSymlink == 0 {
				continue
			}
			if t, err := os.Readlink(filepath.Join(hooks, e.Name())); err == nil {
				if !filepath.IsAbs(t) {
					t = filepath.Join(hooks, t)
				}
				addPath(Path{Path: t, Name: GitHooks, Optional: true})
			}
		}
	}
	// refs protects the files the named config files of git dir g make
	// git use from elsewhere (possibly in the project): the hooks
	// directory, included configuration.
	refs := func(g string, cfgs ...string) {
		for _, cfg := range cfgs {
			hp, incs := configRefs(filepath.Join(g, cfg), workdir)
			if hp != "" {
				addPath(Path{Path: hp, Name: GitHooks, Dir: true, Optional: true})
				hookLinks(hp)
			}
			for _, inc := range incs {
				addPath(Path{Path: inc, Name: GitConfig, Optional: true})
			}
		}
	}
	gitMeta := func(g string, hooks bool) {
		add(filepath.Join(g, "config"), GitConfig, false)
		add(filepath.Join(g, "config.worktree"), GitConfig, false)
		// commondir redirects git to another repository's config.
		addPath(Path{Path: filepath.Join(g, "commondir"), Name: GitConfig, Optional: true})
		if hooks {
			add(filepath.Join(g, "hooks"), GitHooks, true)
			hookLinks(filepath.Join(g, "hooks"))
		}
		refs(g, "config", "config.worktree")
	}
	// A linked worktree's git dir has config.worktree of its own, and its
	// commondir names the repository whose config applies.
	worktreeMeta := func(g string) {
		add(filepath.Join(g, "config.worktree"), GitConfig, false)
		addPath(Path{Path: filepath.Join(g, "commondir"), Name: GitConfig, Optional: true})
		refs(g, "config.worktree")
	}
	// A submodule's git dir has its own config and hooks.
	nested := func(g string) {
		for _, sub := range nestedGitDirs(g) {
			if sub.module {
				gitMeta(sub.dir, true)
			} else {
				worktreeMeta(sub.dir)
			}
		}
	}
	dotgit := filepath.Join(workdir, ".git")
	if st, err := os.Lstat(dotgit); err == nil {
		switch {
		case st.IsDir():
			gitMeta(dotgit, true)
			nested(dotgit)
		default:
			add(dotgit, GitFile, false)
		}
	}
	for _, p := range project {
		add(filepath.Join(workdir, p.name), p.name, p.dir)
	}
	if commonDir != "" {
		// A worktree's own git dir holds only config.worktree; hooks and
		// config come from the common dir.
		if gitDir != "" && gitDir != commonDir {
			worktreeMeta(gitDir)
		}
		gitMeta(commonDir, true)
		nested(commonDir)
	} else if gitDir != "" {
		gitMeta(gitDir, true)
		nested(gitDir)
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, p := range out {
		if !seen[p.Path] {
			seen[p.Path] = true
			uniq = append(uniq, p)
		}
	}
	return uniq
}

// configRefs reads the git config file at path for the files it makes git
// use from elsewhere: core.hooksPath (hooks, instead of hooks/; husky
// points it into the project), relative to the working tree (workdir), and
// include.path / includeIf.*.path (more configuration), relative to the
// config file's directory. "~/" is the home directory. Unreadable or huge
// files give nothing; included files are not read in turn.
func configRefs(path, workdir string) (hooks string, includes []string) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 1<<20 {
		return "", nil
	}
	resolve := func(val, base string) string {
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch {
		case val == "":
			return ""
		case strings.HasPrefix(val, "~/"):
			h, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			return filepath.Join(h, val[2:])
		case filepath.IsAbs(val):
			return filepath.Clean(val)
		}
		return filepath.Join(base, val)
	}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.ToLower(strings.TrimSpace(strings.Trim(line, "[]")))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		switch {
		case section == "core" && strings.EqualFold(k, "hooksPath"):
			hooks = resolve(v, workdir)
		case (section == "include" || strings.HasPrefix(section, "includeif")) && strings.EqualFold(k, "path"):
			if p := resolve(v, filepath.Dir(path)); p != "" {
				includes = append(includes, p)
			}
		}
	}
	return hooks, includes
}

// maxNested bounds the submodule and worktree git dirs For looks at.
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

// ProjectTops are the first components of the protected project names
// (.vscode, .claude, .envrc, ...): what a scan looks for in subdirectories.
func ProjectTops() map[string]bool {
	out := map[string]bool{}
	for _, p := range project {
		out[strings.SplitN(p.name, "/", 2)[0]] = true
	}
	return out
}

// reported are project names other tools run code from that the built-in
// engine does not keep read-only (an agent's legitimate work edits some of
// them, and a placeholder for a missing one would change what its tool
// does): other agents' project settings, extensions and plugins (pi,
// Gemini CLI, opencode, Cursor), editor files (Zed, Vim and Neovim), git
// hook managers (pre-commit, husky, lefthook), mise and dev containers.
// The end-of-run scan reports each one the run created or changed, at any
// depth of the workdir.
var reported = map[string]bool{
	".pi": true, ".gemini": true, ".opencode": true, "opencode.json": true, "opencode.jsonc": true,
	".cursor": true, ".zed": true, ".exrc": true, ".nvimrc": true, ".nvim.lua": true,
	".pre-commit-config.yaml": true, ".husky": true,
	"lefthook.yml": true, "lefthook.yaml": true, ".lefthook.yml": true, ".lefthook.yaml": true,
	"lefthook-local.yml": true, "lefthook-local.yaml": true,
	"mise.toml": true, ".mise.toml": true, "mise.local.toml": true, ".mise.local.toml": true, ".mise": true,
	".devcontainer": true, ".devcontainer.json": true,
}

// Reported says whether a file or directory of this base name is one that
// other tools run code from but that no run keeps read-only (the names
// above, and VS Code's *.code-workspace files): the end-of-run scan names
// it when the run created or changed it.
func Reported(name string) bool {
	return reported[name] || strings.HasSuffix(name, ".code-workspace")
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

// noHardLinks refuses a protected file (or a file directly in a protected
// directory) that has other hard links: the agent would write it through
// the other name.
func noHardLinks(path string, st os.FileInfo, name string) error {
	check := func(p string, fi os.FileInfo) error {
		if fi.Mode().IsRegular() && linkCount(fi) > 1 {
			return fmt.Errorf("protected path %s has %d hard links: the agent could change it through another name; remove the other links, or allow editing with --allow-edit %s", p, linkCount(fi), name)
		}
		return nil
	}
	if !st.IsDir() {
		return check(path, st)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil
	}
	for i, e := range ents {
		if i >= maxNested || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			if err := check(filepath.Join(path, e.Name()), fi); err != nil {
				return err
			}
		}
	}
	return nil
}

func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// ErrSymlink marks a protected path that is, or lies below, a symlink.
var ErrSymlink = errors.New("is a symlink")

// Check looks at each protected path below the writable root that holds
// it: every component from root to the path must be a directory (or, for
// the path itself, a file or directory of the expected kind) or missing,
// never a symlink, which the agent could repoint or write through. Paths
// inside no root are dropped (nothing there is writable). It returns the
// paths to protect and, per path, the root holding it.
func Check(paths []Path, roots []string) ([]Path, map[string]string, error) {
	var out []Path
	rootOf := map[string]string{}
	for _, p := range paths {
		root, explicit := "", false
		for _, r := range roots {
			if p.Path == r {
				explicit = true
			}
			if strings.HasPrefix(p.Path, r+"/") && len(r) > len(root) {
				root = r
			}
		}
		if root == "" || explicit {
			continue // nothing writable holds it, or it is granted writable by name
		}
		rel := strings.TrimPrefix(p.Path, root+"/")
		parts := strings.Split(rel, "/")
		cur := root
		missing := false
		for i, part := range parts {
			cur = filepath.Join(cur, part)
			st, err := os.Lstat(cur)
			if errors.Is(err, os.ErrNotExist) {
				missing = true
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("protected path %s: %v", p.Path, err)
			}
			last := i == len(parts)-1
			switch {
			case st.Mode()&os.ModeSymlink != 0:
				target, _ := os.Readlink(cur)
				return nil, nil, fmt.Errorf("%s %w (to %s): agent-sandbox keeps %s read-only so that the agent cannot plant code your tools run later, and cannot protect a path through a link (the agent could repoint it or write where it leads); replace the link with what it points to, or allow the agent to edit it with --allow-edit %s (or allow_edit in agent.toml)", cur, ErrSymlink, target, p.Path, p.Name)
			case !last && !st.IsDir():
				return nil, nil, fmt.Errorf("protected path %s: %s is not a directory; remove it or allow editing with --allow-edit %s", p.Path, cur, p.Name)
			case last && !st.IsDir() && !st.Mode().IsRegular():
				return nil, nil, fmt.Errorf("protected path %s is neither a file nor a directory (%v); remove it or allow editing with --allow-edit %s", p.Path, st.Mode().Type(), p.Name)
			case last:
				if err := noHardLinks(cur, st, p.Name); err != nil {
					return nil, nil, err
				}
			}
		}
		if missing && p.Optional {
			continue
		}
		out = append(out, p)
		rootOf[p.Path] = root
	}
	return out, rootOf, nil
}

// Unenforced is the warning of a backend that cannot keep ps read-only
// (why says why), or "" when ps is empty: it names what the agent can
// write and the backend that protects it.
func Unenforced(backend, why string, ps []Path) string {
	if len(ps) == 0 {
		return ""
	}
	var names []string
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p.Name] {
			seen[p.Name] = true
			names = append(names, p.Name)
		}
	}
	return fmt.Sprintf("%s: the files your tools run code from are NOT protected inside the writable grants (%s): the agent can write or create %s (and the linked git dirs' config and hooks), which git, your editor, direnv or an agent run later on the host; --sandbox-backend landlock keeps them read-only", backend, why, strings.Join(names, ", "))
}

// Why nono and sbx cannot protect them.
const (
	NonoCannot = "on Linux Landlock cannot deny a path inside an allowed directory and nono refuses such overlaps; agent-sandbox's nono profile does not carve them out on macOS either"
	SbxCannot  = "sbx mounts whole directories, read-only or read-write"
)
