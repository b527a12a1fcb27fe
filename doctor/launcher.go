package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/gitdir"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// writable is a path a sandboxed agent can write, and why.
type writable struct {
	path string // canonical
	why  string
}

// launcherFix is the fix for a launcher inside a writable grant.
const launcherFix = "install the program outside every path a sandboxed agent can write (the Nix package, or `go install` to ~/go/bin), or narrow the grant named above"

// agentGrants are what one agent can write besides the shared paths.
type agentGrants struct {
	id     string
	grants []writable
}

// grantSets are the paths the checked agents can write: shared by every
// run started here, and per agent.
type grantSets struct {
	shared []writable
	agents []agentGrants
}

// writableSets collects what launcher checks against: the working
// directory (when a run may start there), its linked git dir, each agent's
// state dir, config_paths and filesystem.allow/write entries, and, when
// nono is installed, the temp directories nono's default profile grants
// read-write. report says whether the workdir result is added.
func (r *run) writableSets(targets []target, report bool) grantSets {
	var gs grantSets
	gs.shared = r.workdirGrants(report)
	if r.nonoPath != "" {
		for _, d := range uniqueCanonical(os.TempDir(), "/tmp") {
			gs.shared = append(gs.shared, writable{d, "the temp directory " + d + " (nono's default profile grants it read-write to every agent: group system_write_linux)"})
		}
	}
	for _, t := range targets {
		if t.folder != nil {
			gs.agents = append(gs.agents, agentGrants{t.folder.ID, r.agentWritable(t)})
		}
	}
	return gs
}

// insideWritable returns one reason per writable path that holds the
// program name at path (as found or after symlinks); none when it lies
// outside all of them.
func (gs grantSets) insideWritable(name, path string) []string {
	var out []string
	for _, loc := range uniqueCanonicalLocations(path) {
		for _, g := range gs.shared {
			if grant.Within(loc, g.path) {
				out = append(out, fmt.Sprintf("%s %s lies inside %s: a sandboxed agent could replace the program that sandboxes it", name, loc, g.why))
			}
		}
		for _, a := range gs.agents {
			for _, g := range a.grants {
				if grant.Within(loc, g.path) {
					out = append(out, fmt.Sprintf("%s %s lies inside %s, which agent %s can write: it could replace the program that sandboxes it", name, loc, g.why, a.id))
				}
			}
		}
	}
	return out
}

// silentSets computes the writable paths before the host checks probe
// nono and sbx, without adding results: a probe must never execute a
// program an agent could have planted. Without a usable $HOME it falls
// back to the current directory alone.
func (r *run) silentSets() grantSets {
	s := *r
	s.results, s.exists = nil, map[string]error{}
	if !s.setHome() {
		if wd, err := os.Getwd(); err == nil {
			wd = grant.Canonical(wd)
			return grantSets{shared: []writable{{wd, "the working directory " + wd}}}
		}
		return grantSets{}
	}
	return s.writableSets(s.targets(), false)
}

// unprobed is the result for a program doctor refuses to execute.
func unprobed(check string, reasons []string) Result {
	return Result{Check: check, Status: Fail,
		Detail: strings.Join(reasons, "; ") + "; not executed (doctor never runs a program a sandboxed agent could have planted)",
		Fix:    launcherFix}
}

// ProgramInsideWritable says why agent-sandbox must not execute the
// program name at path outside the sandbox (nono, sbx): it lies, as found
// or after symlinks, inside a path that a sandboxed agent started from the
// working directory o.Workdir (or the current directory) can write. ""
// means it may be executed. Commands that run such a program (agents,
// prune) call it first.
func ProgramInsideWritable(o Options, name, path string) string {
	o.FoldersOnly = false
	return strings.Join(newRun(o).silentSets().insideWritable(name, path), "; ")
}

// launcher checks that the programs doing the sandboxing (agent-sandbox
// itself, nono, sbx) lie outside every path the checked agents can write
// (writableSets).
func (r *run) launcher(targets []target) {
	gs := r.writableSets(targets, true)
	executable := r.o.executable
	if executable == nil {
		executable = os.Executable
	}
	type program struct{ name, path string }
	var progs []program
	if exe, err := executable(); err != nil {
		r.add("launcher agent-sandbox", Warn, "cannot find the agent-sandbox executable: "+err.Error()+"; not checked", "run agent-sandbox by its path")
	} else {
		progs = append(progs, program{"agent-sandbox", exe})
	}
	if r.nonoPath != "" {
		progs = append(progs, program{"nono", r.nonoPath})
	}
	if r.sbxPath != "" {
		progs = append(progs, program{"sbx", r.sbxPath})
	}
	for _, p := range progs {
		check := "launcher " + p.name
		bad := gs.insideWritable(p.name, p.path)
		for _, why := range bad {
			r.add(check, Fail, why, launcherFix)
		}
		if len(bad) == 0 {
			r.add(check, OK, fmt.Sprintf("%s is outside every path the %d checked agent(s) can write", describeLocs(uniqueCanonicalLocations(p.path)), len(gs.agents)), "")
		}
	}
}

// workdirGrants are the writable paths every run started in the working
// directory gets: the directory itself and its linked git dirs. A working
// directory where runs are refused adds nothing; the "workdir" result says
// which case applies.
func (r *run) workdirGrants(report bool) []writable {
	c := grant.Checker{Home: r.home, Protected: r.home.Protected(r.lookup.Paths()...)}
	add := r.add
	if !report {
		add = func(string, Status, string, string) {}
	}
	if err := c.Check(r.workdir, true); err != nil {
		add("workdir", OK, fmt.Sprintf("%s: a run started here is refused (the working directory %v), so it is not counted as writable", r.workdir, err), "")
		return nil
	}
	out := []writable{{r.workdir, "the working directory " + r.workdir + " (read-write in every run started there)"}}
	linked, _ := gitdir.Find(r.workdir)
	for _, d := range linked.Dirs() {
		if c.Check(d, true) == nil {
			out = append(out, writable{d, "the linked git dir " + d + " of the working directory (read-write in every run started there)"})
		}
	}
	add("workdir", OK, r.workdir+": runs started here get it read-write; the launcher check counts it as writable", "")
	return out
}

// agentWritable lists what one agent can write besides the working
// directory: its state dir (all of it, as sbx mounts it), config_paths and
// the filesystem.allow and filesystem.write entries of both folder files.
func (r *run) agentWritable(t target) []writable {
	f := t.folder
	state := r.home.AgentStateDir(f.ID)
	out := []writable{{grant.Canonical(state), "its state directory " + state}}
	add := func(file, key string, list []string) {
		for i, raw := range list {
			p, err := r.home.Expand(raw)
			if err != nil {
				continue // plan.Build refuses it; the grants check says so
			}
			out = append(out, writable{grant.Canonical(p), fmt.Sprintf("%s: %s[%d] = %q", file, key, i, raw)})
		}
	}
	add(filepath.Join(f.Dir, "agent.toml"), "config_paths", f.Config.ConfigPaths)
	if f.Nono != nil {
		add(f.Nono.Path, "filesystem.allow", f.Nono.Filesystem.Allow)
		add(f.Nono.Path, "filesystem.write", f.Nono.Filesystem.Write)
	}
	if f.Sbx != nil {
		add(f.Sbx.Path, "filesystem.allow", f.Sbx.Filesystem.Allow)
		add(f.Sbx.Path, "filesystem.write", f.Sbx.Filesystem.Write)
	}
	return out
}

// uniqueCanonicalLocations is p (absolute) and, when it differs, the file p
// resolves to: replacing either replaces the program.
func uniqueCanonicalLocations(p string) []string {
	p = absOr(p)
	out := []string{p}
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
		out = append(out, real)
	}
	return out
}

func uniqueCanonical(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p != "" {
			out = append(out, grant.Canonical(p))
		}
	}
	return uniq.Ordered(out)
}

func describeLocs(locs []string) string {
	if len(locs) == 1 {
		return locs[0]
	}
	return locs[0] + " (-> " + locs[1] + ")"
}
