// Package doctor checks that agent-sandbox can do its job: that this host
// has a working sandbox backend, that agent folders are sound, and that the
// programs doing the sandboxing cannot be replaced by a sandboxed agent.
//
// It owns the checks behind `agent-sandbox doctor` and their verdicts; the
// rules themselves stay where they live (grant legality in internal/plan and
// internal/grant, closures in pathresolve, kernel facts in
// internal/landlock): doctor calls them and turns what they say into one
// [Result] per finding. Every check is read-only: doctor creates, changes and
// starts nothing, apart from the bounded version and status probes of nono
// and sbx and the user-namespace probe of internal/landlock.
//
// The checks, in the order [Run] returns them:
//
//   - host (skipped with FoldersOnly): Landlock ABI and what each level
//     enables, kernel release, unprivileged user namespaces (and Ubuntu's
//     AppArmor restriction), nono and its version, sbx and its login and
//     policy state;
//   - each agent folder: it loads (agent.toml, sandbox/nono.json and
//     sandbox/sbx.json parse, every key known; sbx.json's dropped keys are
//     warnings), its grants are legal (plan.Build under the backend each file
//     is for), a plain run's posture works on this host (not with
//     FoldersOnly), its command is installed, the closures of its command and
//     exec_paths resolve (pathresolve), every exec_paths entry is an
//     executable file, and every /nix/store path it names (agent.toml, the
//     folder files, the generated nono profile) exists;
//   - the launcher (skipped with FoldersOnly): agent-sandbox, nono and sbx
//     lie outside every path the checked agents can write.
//
// Decisions:
//
//   - Folder checks build plans with a stand-in working directory,
//     [NeutralWorkdir], which exists nowhere and passes every grant rule. A
//     folder is judged on its own, so `doctor` gives the same verdict from
//     $HOME (where every run is refused) as from a project. Whether the
//     current directory is a legal working directory is the separate
//     "workdir" check, which also decides whether the launcher check counts
//     it as writable.
//   - Grants are checked once per folder file, under the backend that file is
//     for, with nono taken as installed, so that the verdict does not depend
//     on the host (a Nix build has no nono on PATH). A folder with neither
//     file is checked as `--sandbox` would run it (nono). What the host adds
//     (nono missing, so the built-in landlock engine; a kernel that cannot
//     enforce the policy) is the "posture" check.
//   - A closure with something missing fails: the kernel backends grant only
//     the files pathresolve finds, and nono and the landlock engine strip
//     LD_LIBRARY_PATH, so the program cannot start inside the sandbox.
//   - A command that is not installed is a warning (the folder may be meant
//     for another machine); a posture that would be refused fails only when
//     the command is installed, otherwise it is a warning too.
//   - nono's version is checked against 0.74-0.78, the range the generated
//     profiles are written for ([NonoVersionRange]); outside it is a warning.
//     Its schema (`nono profile schema`) must declare every key of the
//     profiles agent-sandbox writes (backends.NonoSchemaMissing); a key it lacks
//     fails, since nono would refuse every such profile.
//   - A stale /nix/store path in agent.toml, a folder file or the generated
//     profile fails; in a profile left in the state directory by an earlier
//     run it is a warning, since the next run rewrites that file.
//   - With FoldersOnly nothing depends on $HOME existing or being set: an
//     unset or relative HOME is replaced by [PlaceholderHome] (what Nix
//     builders set), so that `~` grants can still be judged.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
)

// Status is the verdict of one check.
type Status string

// The three verdicts. Any Fail makes `agent-sandbox doctor` exit 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one finding.
type Result struct {
	// Check names what was checked: a host facility ("landlock", "nono"),
	// "<agent> <aspect>" for an agent folder ("claude exec_paths"), or
	// "launcher <program>".
	Check string `json:"check"`
	// Status is ok, warn or fail.
	Status Status `json:"status"`
	// Detail says what was found; for a folder problem it names the file,
	// the key and the value at fault.
	Detail string `json:"detail"`
	// Fix says what to do; "" for ok.
	Fix string `json:"fix"`
}

// NeutralWorkdir is the stand-in working directory of the plans built by the
// folder checks. It does not exist, and no grant rule refuses it.
const NeutralWorkdir = "/nonexistent/agent-sandbox-doctor-workdir"

// PlaceholderHome stands in for an unset or relative $HOME with FoldersOnly.
const PlaceholderHome = "/homeless-shelter"

// DefaultProbeTimeout bounds each probe of an external program (nono
// --version, sbx ls -q, sbx policy ls) when Options.ProbeTimeout is 0.
const DefaultProbeTimeout = 20 * time.Second

// DefaultSystemDir is where the NixOS module writes agent folders.
const DefaultSystemDir = "/etc/agent-sandbox/agents"

// Options say what to check and describe the environment.
type Options struct {
	// Agents are AGENT arguments as for a run: names, or paths to agent
	// folders (anything containing "/"). Empty means every agent visible
	// by name.
	Agents []string
	// FoldersOnly runs only the folder checks: no host probes, no launcher
	// check, no dependency on $HOME, and the current directory plays no
	// part. For `nix build` check phases.
	FoldersOnly bool
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// LookPath finds a program on PATH; nil means exec.LookPath.
	LookPath func(string) (string, error)
	// Workdir is where runs would start (the launcher and workdir checks,
	// and name lookup's working-directory rule); "" means the current
	// directory. Unused with FoldersOnly.
	Workdir string
	// SystemDir is the system agent directory; "" means DefaultSystemDir.
	SystemDir string
	// ProbeTimeout bounds each external probe; 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration

	// executable returns the agent-sandbox binary; nil means os.Executable.
	// Tests point the launcher check elsewhere with it.
	executable func() (string, error)
}

// Run runs the checks and returns their results, host first, then each
// agent folder, then the launcher.
func Run(o Options) []Result {
	results, _ := RunWithSummary(o)
	return results
}

// RunWithSummary is Run, with the first look that leads the text form
// (Summary, WriteSummary).
func RunWithSummary(o Options) ([]Result, Summary) {
	r := newRun(o)
	results := r.runAll()
	return results, r.summary()
}

func (r *run) runAll() []Result {
	o := r.o
	if !o.FoldersOnly {
		// Where a sandboxed agent can write is known before nono or sbx
		// is probed: a planted one is reported, never executed.
		r.guard = r.silentSets()
		r.host()
	}
	if !r.setHome() {
		return r.results
	}
	targets := r.targets()
	for _, t := range targets {
		r.folder(t)
	}
	r.missingCredentials()
	if !o.FoldersOnly {
		r.launcher(targets)
	}
	return r.results
}

// Failed reports whether any result is a Fail.
func Failed(results []Result) bool {
	for _, res := range results {
		if res.Status == Fail {
			return true
		}
	}
	return false
}

// WriteText writes one line per result, "ok|warn|fail  <check>: <detail>",
// the status padded to four columns, and under each warn or fail an indented
// "fix: ..." line.
func WriteText(w io.Writer, results []Result) error {
	var b strings.Builder
	for _, res := range results {
		fmt.Fprintf(&b, "%-4s  %s: %s\n", res.Status, res.Check, res.Detail)
		if res.Status != OK && res.Fix != "" {
			fmt.Fprintf(&b, "      fix: %s\n", res.Fix)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the results as one indented JSON array of
// {"check", "status", "detail", "fix"} objects ([] when there are none).
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// run is one doctor run.
type run struct {
	o        Options
	getenv   func(string) string
	lookPath func(string) (string, error)
	goos     string
	home     grant.Home
	lookup   agent.Lookup
	workdir  string // canonical; "" with FoldersOnly
	timeout  time.Duration
	nonoPath string // where PATH has nono; "" when not found
	sbxPath  string
	results  []Result
	// guard are the writable paths probes check first (silentSets).
	guard  grantSets
	exists map[string]error // os.Stat results of store paths
	// storeFS is prepended to a store path before it is looked up: "" (the
	// host's /nix/store) except in tests, which build a store under a
	// temporary root.
	storeFS string
	// missingCreds are the credential sources without a value ("ENV
	// (source SRC: why)"), each with the agents that name it, in
	// missingOrder (missingCredentials).
	missingCreds map[string][]string
	missingOrder []string
	// looks are the agents' first looks (posture), for Summary.
	looks []agentLook
}

func newRun(o Options) *run {
	r := &run{o: o, getenv: o.Getenv, lookPath: o.LookPath, goos: runtime.GOOS, timeout: o.ProbeTimeout, exists: map[string]error{}, missingCreds: map[string][]string{}}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.lookPath == nil {
		r.lookPath = exec.LookPath
	}
	if r.timeout <= 0 {
		r.timeout = DefaultProbeTimeout
	}
	if p, err := r.lookPath("nono"); err == nil {
		r.nonoPath = absOr(p)
	}
	if p, err := r.lookPath("sbx"); err == nil {
		r.sbxPath = absOr(p)
	}
	return r
}

func (r *run) add(check string, st Status, detail, fix string) {
	if st == OK {
		fix = ""
	}
	r.results = append(r.results, Result{Check: check, Status: st, Detail: detail, Fix: fix})
}

// setHome fixes the home directory, the lookup and the working directory;
// it reports false (after adding a fail) when the folder checks cannot run.
func (r *run) setHome() bool {
	h, err := grant.HomeFromEnv(r.getenv, r.goos)
	if err != nil {
		if !r.o.FoldersOnly {
			r.add("home", Fail, err.Error()+"; agent folders and the launcher were not checked", "set HOME to your absolute home directory")
			return false
		}
		h, _ = grant.HomeFromEnv(func(k string) string {
			if k == "HOME" {
				return PlaceholderHome
			}
			return r.getenv(k)
		}, r.goos)
	}
	r.home = h
	if !r.o.FoldersOnly {
		wd := r.o.Workdir
		if wd == "" {
			if wd, err = os.Getwd(); err != nil {
				r.add("workdir", Fail, "cannot read the current directory: "+err.Error(), "run agent-sandbox doctor from an existing directory")
				return false
			}
		}
		if abs, err := filepath.Abs(wd); err == nil {
			wd = abs
		}
		r.workdir = grant.Canonical(wd)
	}
	systemDir := r.o.SystemDir
	if systemDir == "" {
		systemDir = DefaultSystemDir
	}
	r.lookup = agent.Lookup{
		Path:      r.getenv("AGENT_SANDBOX_PATH"),
		UserDir:   filepath.Join(h.ConfigRoot(), "agents"),
		SystemDir: systemDir,
		Workdir:   r.workdir,
	}
	return true
}

// target is one agent folder to check.
type target struct {
	arg    string // the AGENT argument, or the listed name
	name   string // the agent id (a path argument's last element until it loads)
	dir    string // the folder on disk, "builtin:<id>", or "" when unknown
	source agent.Source
	folder *agent.Folder // nil when it failed to load
	warn   string        // from agent.Find
	err    error
}

func (r *run) targets() []target {
	var out []target
	if len(r.o.Agents) == 0 {
		for _, l := range agent.All(r.lookup) {
			out = append(out, target{arg: l.Name, name: l.Name, dir: l.Dir, source: l.Source, folder: l.Folder, err: l.Err})
		}
		return out
	}
	for _, arg := range r.o.Agents {
		t := target{arg: arg, name: arg}
		if strings.Contains(arg, "/") {
			if abs, err := filepath.Abs(arg); err == nil {
				t.dir = abs
			}
			t.name, t.source = filepath.Base(filepath.Clean(arg)), agent.FromPath
		}
		t.folder, t.warn, t.err = agent.Find(arg, r.lookup)
		if t.folder != nil {
			t.name, t.dir, t.source = t.folder.ID, t.folder.Dir, t.folder.Source
		}
		out = append(out, t)
	}
	return out
}

func absOr(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
