package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// toolchainRoots are the trees a program found below them comes from
// (nono 0.74's runtime groups: go_runtime, rust_runtime, python_runtime,
// node_runtime, and a few managers of the same kind), relative to $HOME
// unless absolute. A PATH entry inside one gets the whole tree.
var toolchainRoots = []string{
	"/usr/local/go", "go", "sdk",
	".cargo", ".rustup",
	".pyenv", ".local/share/uv", ".conda", "miniconda3", "anaconda3",
	".nvm", ".fnm", ".local/share/fnm", ".local/share/pnpm", ".volta", ".bun", ".deno",
	".local/share/mise", ".asdf", ".sdkman", ".rbenv", ".goenv", ".nodenv", ".local/share/nvim/mason",
}

// allowParts are the toolchain trees known to hold credentials (a
// registry token that `cargo login`, `uv auth login`, `conda token set` or
// bun writes into the tree), and the parts of each that the toolchain
// needs to work: only those parts are granted, never the tree minus its
// known secrets. A part the host creates or replaces during the run is
// granted or not as it was; a credential file that appears there later
// is not in any granted part, so it cannot appear inside (a mask over it
// would, when the host replaces it).
var allowParts = map[string][]string{
	".cargo":          {"bin", "registry", "git", "env", "config.toml", "config"},
	".local/share/uv": {"python", "tools", "bin"},
	".conda":          {"envs", "pkgs", "environments.txt"},
	".bun":            {"bin", "install/cache", "install/global"},
}

// companions are trees a toolchain's programs need besides their own:
// rustup's proxies in ~/.cargo/bin run the toolchains in ~/.rustup.
var companions = map[string][]string{".cargo": {".rustup"}}

// maxLinkScan bounds how many entries of one PATH directory in the home
// are examined for symlinks into other trees (pipx, uv tool).
const maxLinkScan = 512

// toolFinder collects the toolchain trees of userTools.
type toolFinder struct {
	home     string
	c        grant.Checker
	writable []string
	system   func(string) bool
	seen     map[string]bool
	tools    []spec.Toolchain
	notes    []string
}

// userTools finds what the user's everyday tools need beyond the system
// paths: the trees of the programs on PATH (toolchains) and git's own
// configuration files, each checked like a read grant. A tree that holds
// a credential path, or lies inside one, is refused; what lies inside a
// path the agent can write is skipped (it is granted already, writable).
func userTools(h grant.Home, path string, c grant.Checker, writable []string, system func(string) bool) (tools []spec.Toolchain, config []string, links []spec.Link, notes []string) {
	f := &toolFinder{home: grant.Canonical(h.Dir), c: c, writable: writable, system: system, seen: map[string]bool{}}
	for _, entry := range filepath.SplitList(path) {
		f.pathEntry(entry)
	}
	config, links, gitNotes := gitConfig(h, c)
	return f.tools, config, links, append(f.notes, gitNotes...)
}

// agentWrites says whether p lies in a path the agent can write.
func (f *toolFinder) agentWrites(p string) bool {
	for _, w := range f.writable {
		if grant.Within(p, w) {
			return true
		}
	}
	return false
}

// covered says whether p is granted already: a system path, inside a
// writable path or inside a toolchain found so far.
func (f *toolFinder) covered(p string) bool {
	if f.system(p) || f.agentWrites(p) {
		return true
	}
	for _, t := range f.tools {
		if grant.Within(p, t.Path) {
			return true
		}
	}
	return false
}

// pathEntry adds the tree of one PATH entry (absolute, a directory) and
// the trees of the programs linked into it from elsewhere.
func (f *toolFinder) pathEntry(entry string) {
	if !filepath.IsAbs(entry) {
		return
	}
	fi, err := os.Stat(entry)
	if err != nil || !fi.IsDir() {
		return
	}
	dir := grant.Canonical(entry)
	// A PATH directory the agent can write, or one reached through a
	// symlink it can replace, holds what the agent chose: its links lead
	// wherever the agent points them, so nothing is granted from it (it
	// could widen its next run). What lies inside a writable grant is
	// visible anyway.
	if f.agentWrites(dir) {
		return
	}
	if l := linkInWritable(entry, f.agentWrites); l != "" {
		f.notes = append(f.notes, fmt.Sprintf("PATH entry %s is reached through the symlink %s, which the agent can write: nothing is granted from it", entry, l))
		return
	}
	if !f.covered(dir) {
		f.addTree(dir, "on PATH as "+entry)
	}
	if !f.system(dir) {
		f.linkedIn(dir)
	}
}

// linkedIn adds the trees of programs linked into dir from elsewhere
// (pipx, uv tool install), looking at maxLinkScan entries at most.
func (f *toolFinder) linkedIn(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for i, e := range ents {
		if i == maxLinkScan {
			break
		}
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, e.Name())
		target, err := filepath.EvalSymlinks(link)
		if err != nil || f.covered(target) {
			continue
		}
		if l := linkInWritable(link, f.agentWrites); l != "" {
			f.notes = append(f.notes, fmt.Sprintf("%s leads through the symlink %s, which the agent can write: nothing is granted from it", link, l))
			continue
		}
		f.addTree(filepath.Dir(target), fmt.Sprintf("%s links to it", link))
	}
}

// addTree grants the toolchain tree dir lies in (treeOf), else dir
// itself, whichever passes the checker first, with its companions.
func (f *toolFinder) addTree(dir, why string) {
	cand := treeOf(dir, f.home)
	for _, p := range []string{cand, dir} {
		if f.seen[p] {
			return
		}
		if err := f.c.Check(p, false); err != nil {
			f.notes = append(f.notes, fmt.Sprintf("toolchain %s (%s) %v; not granted", p, why, err))
			continue
		}
		f.seen[p] = true
		if parts, ok := allowParts[relHome(f.home, p)]; ok {
			f.addParts(p, parts, dir, why)
		} else {
			f.tools = append(f.tools, spec.Toolchain{Path: p, Dir: dir, Why: why})
		}
		f.addCompanions(p, dir)
		return
	}
}

// addParts grants only the parts of tree p that its toolchain needs
// (allowParts), and the PATH directory dir itself when it is none of
// them.
func (f *toolFinder) addParts(p string, parts []string, dir, why string) {
	for _, part := range parts {
		pp := filepath.Join(p, part)
		if _, err := os.Lstat(pp); err != nil || f.c.Check(pp, false) != nil {
			continue
		}
		f.tools = append(f.tools, spec.Toolchain{Path: pp, Dir: dir, Why: why + " (the parts of " + p + " it needs; the rest may hold credentials)"})
	}
	if !f.covered(dir) {
		f.tools = append(f.tools, spec.Toolchain{Path: dir, Dir: dir, Why: why})
	}
}

// addCompanions grants the trees tree p's programs need besides their
// own (companions).
func (f *toolFinder) addCompanions(p, dir string) {
	rel, err := filepath.Rel(f.home, p)
	if err != nil {
		return
	}
	for _, comp := range companions[rel] {
		cp := filepath.Join(f.home, comp)
		if _, err := os.Stat(cp); err == nil && !f.seen[cp] && f.c.Check(cp, false) == nil {
			f.seen[cp] = true
			f.tools = append(f.tools, spec.Toolchain{Path: cp, Dir: dir, Why: "needed by " + p})
		}
	}
}

// linkInWritable resolves p one name at a time and returns the first
// symlink on the way that lies where the agent can write (agentWrites of
// its real location), or "" when there is none: such a link leads
// wherever the agent points it by its next run.
func linkInWritable(p string, agentWrites func(string) bool) string {
	todo := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return ""
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if agentWrites(next) {
			return next
		}
		if hops++; hops > 40 {
			return ""
		}
		t, err := os.Readlink(next)
		if err != nil {
			return ""
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		todo = append(strings.Split(strings.Trim(t, "/"), "/"), todo...)
	}
	return ""
}

// gitConfig finds git's own configuration files in the user's home
// (~/.gitconfig, ~/.gitignore_global, $XDG_CONFIG_HOME/git/{config,ignore,attributes}),
// each checked like a read grant: readable, never writable (it can run
// code). links are those reached through a symlink (a dotfiles
// repository), for the built-in engine's view.
func gitConfig(h grant.Home, c grant.Checker) (config []string, links []spec.Link, notes []string) {
	for _, rel := range []string{".gitconfig", ".gitignore_global", ".config/git/config", ".config/git/ignore", ".config/git/attributes"} {
		p := filepath.Join(h.Dir, rel)
		if rel == ".config/git/config" || rel == ".config/git/ignore" || rel == ".config/git/attributes" {
			p = filepath.Join(h.XDGConfig, strings.TrimPrefix(rel, ".config/"))
		}
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		canon := grant.Canonical(p)
		if _, err := os.Stat(canon); err != nil {
			continue
		}
		if err := c.Check(canon, false); err != nil {
			notes = append(notes, fmt.Sprintf("git configuration %s %v; not granted", p, err))
			continue
		}
		config = append(config, canon)
		if canon != p {
			links = append(links, spec.Link{Path: p, Target: canon})
		}
	}
	return config, links, notes
}

// systemGitConfig is git's system-wide configuration file. The built-in
// engine's view shows all of /etc (its secret files masked); a nono run
// gets this file read-only, because git stops with "unknown error
// occurred while reading the configuration files" when a configuration
// file it finds cannot be read (EACCES), unlike one that is absent.
const systemGitConfig = "/etc/gitconfig"

// nonoGitConfig is what a nono run gets of git's configuration, readable
// only: the user's files (gitConfig) and the system file when it exists.
func nonoGitConfig(h grant.Home, c grant.Checker) (config []string, notes []string) {
	config, _, notes = gitConfig(h, c)
	if st, err := os.Stat(systemGitConfig); err == nil && st.Mode().IsRegular() {
		config = append(config, grant.Canonical(systemGitConfig))
	}
	return config, notes
}

// relHome is p relative to home, or "" when p is not below it.
func relHome(home, p string) string {
	if rel, ok := strings.CutPrefix(p, home+"/"); ok {
		return rel
	}
	return ""
}

// treeOf returns the tree a PATH directory belongs to: a known toolchain
// root containing it, else the parent of a bin directory (a prefix such as
// /opt/foo), else dir itself. Never $HOME, a parent of it, or a system
// prefix such as /usr.
func treeOf(dir, home string) string {
	for _, r := range toolchainRoots {
		root := r
		if !filepath.IsAbs(r) {
			root = filepath.Join(home, r)
		}
		if grant.Within(dir, root) {
			return root
		}
	}
	if filepath.Base(dir) == ".bin" && filepath.Base(filepath.Dir(dir)) == "node_modules" {
		return filepath.Dir(dir) // the packages its links lead into
	}
	if filepath.Base(dir) == "bin" || filepath.Base(dir) == "sbin" {
		parent := filepath.Dir(dir)
		switch {
		case grant.Within(home, parent), parent == "/usr", parent == "/usr/local", parent == "/opt",
			parent == filepath.Join(home, ".local"):
			return dir
		}
		return parent
	}
	return dir
}
