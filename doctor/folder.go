package doctor

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	landlockbackend "github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
	"github.com/agent-sandbox/agent-sandbox/pathresolve"
)

// storeFix is the fix for a stale store path.
const storeFix = "rebuild / re-render the folder so that it names current store paths (`nixos-rebuild switch`, or rebuild the derivation that renders it); never copy store paths into a hand-edited folder"

// grantFix is the fix for a grant that plan.Build refuses.
const grantFix = "change the grant named above: no grant may be /, your home or a parent of it, nono's state, or a credential path nono denies, and no writable grant may overlap agent-sandbox's own configuration, state or agent folders"

// folderFile is one of the files of an agent folder, read raw.
type folderFile struct {
	rel     string // agent.toml, sandbox/nono.json, sandbox/sbx.json
	display string // the path used in messages
	raw     []byte
}

var folderRels = []string{"agent.toml", sandboxfile.Nono.RelPath(), sandboxfile.Sbx.RelPath()}

// readFolderFiles reads the files of the folder at dir ("builtin:<id>" for
// a built-in); missing files are left out.
func readFolderFiles(dir string) []folderFile {
	var out []folderFile
	for _, rel := range folderRels {
		var b []byte
		var err error
		if id, ok := strings.CutPrefix(dir, "builtin:"); ok {
			b, err = fs.ReadFile(agent.BuiltinFS(), id+"/"+filepath.ToSlash(rel))
		} else {
			b, err = os.ReadFile(filepath.Join(dir, rel))
		}
		if err == nil {
			out = append(out, folderFile{rel: rel, display: filepath.Join(dir, rel), raw: b})
		}
	}
	return out
}

// orView is id, or the view for "".
func orView(id engine.ID) engine.ID {
	if _, ok := engine.Get(id); !ok {
		return engine.View
	}
	return id
}

// folder runs the checks of one agent folder.
func (r *run) folder(t target) {
	check := func(aspect string) string { return t.name + " " + aspect }
	if t.err != nil {
		r.add(check("folder"), Fail, t.err.Error(), "fix what the message names; `agent-sandbox doctor "+t.arg+"` checks the folder again")
		if t.dir != "" {
			r.storePaths(check("store paths"), readFolderFiles(t.dir), nil, "")
		}
		return
	}
	f := t.folder
	files := readFolderFiles(f.Dir)
	tomlPath := filepath.Join(f.Dir, "agent.toml")

	names := []string{"agent.toml"}
	for _, ff := range files {
		if ff.rel != "agent.toml" {
			names = append(names, ff.rel)
		}
	}
	detail := fmt.Sprintf("%s (%s): %s parse", f.Dir, f.Source, strings.Join(names, ", "))
	if len(f.Warnings()) == 0 {
		detail += ", every key known"
	}
	r.add(check("folder"), OK, detail, "")
	if t.warn != "" {
		r.add(check("location"), Warn, t.warn, "move the folder out of the working directory (e.g. to $XDG_CONFIG_HOME/agent-sandbox/agents/"+f.ID+") and name it from there")
	}
	for _, w := range f.Warnings() {
		fix := "remove the key from sandbox/sbx.json: sbx understands only sandbox, filesystem.read|write|allow and network.block|allow_domain"
		if strings.Contains(w, "nono-only") {
			fix = "move the key to sandbox/nono.json (only nono enforces it), or remove it"
		}
		r.add(check("keys"), Warn, w, fix)
	}

	profile, grantErrs := r.grants(check, f)
	var eng engine.ID
	cmdPath := r.command(check("command"), f, tomlPath)
	if !r.o.FoldersOnly {
		eng = r.posture(check("posture"), f, cmdPath != "", grantErrs)
	}
	r.closure(check("closure"), f, tomlPath, cmdPath)
	r.execPaths(check("exec_paths"), f, tomlPath)
	if !r.o.FoldersOnly {
		r.credentials(check("credentials"), f, tomlPath, eng)
	}

	var onDisk string
	if !r.o.FoldersOnly {
		onDisk = filepath.Join(r.home.AgentStateDir(f.ID), nono.ProfileName)
	}
	r.storePaths(check("store paths"), files, profile, onDisk)
}

// build makes the plan a run with posture pst would get, in the neutral
// working directory.
func (r *run) build(f *agent.Folder, pst posture.Posture) (*plan.Plan, error) {
	return plan.Build(plan.Input{
		Folder: f, Posture: pst, Home: r.home, Workdir: NeutralWorkdir, Args: []string{},
		Getenv: r.getenv, LookPath: r.lookPath, Protected: r.lookup.Paths(), NixStore: plan.NixStore(),
	})
}

// grants checks the grants once per folder file, under the backend the file
// is for (nono taken as installed). It returns the generated nono profile
// (nil when there is none) and the errors it reported.
func (r *run) grants(check func(string) string, f *agent.Folder) (*nono.Profile, map[string]bool) {
	type under struct {
		backend posture.Backend
		label   string
	}
	var list []under
	if f.Nono != nil {
		list = append(list, under{posture.Nono, "nono.json"})
	}
	if f.Sbx != nil {
		list = append(list, under{posture.Sbx, "sbx.json"})
	}
	if len(list) == 0 {
		list = append(list, under{posture.Nono, "agent.toml"})
	}
	var profile *nono.Profile
	errs := map[string]bool{}
	saidCreate := false
	for _, u := range list {
		name := check("grants (" + u.label + ")")
		pst, err := posture.Resolve(posture.Input{
			Agent: f.ID, Flags: posture.Flags{Backend: u.backend}, Nono: f.Nono, Sbx: f.Sbx,
			Host: posture.Host{GOOS: r.goos, NonoFound: true},
		})
		if err != nil {
			errs[err.Error()] = true
			r.add(name, Fail, err.Error(), grantFix)
			continue
		}
		p, err := r.build(f, pst)
		if err != nil {
			errs[err.Error()] = true
			r.add(name, Fail, err.Error(), grantFix)
			continue
		}
		fsys := p.Filesystem
		r.add(name, OK, fmt.Sprintf("legal under %s: %d read-only, %d write-only and %d read-write paths (working directory and state included), %d program closure paths",
			u.backend, len(fsys.Read), len(fsys.Write), len(fsys.Allow), len(fsys.ExecClosure)), "")
		if np, ok := p.Prepared.(*nono.Prepared); ok {
			profile = &np.Profile
		}
		// Runs under an installed nono or sbx leave the files the user's
		// tools run code from writable: say so.
		installed := (u.backend == posture.Nono && r.nonoPath != "") || (u.backend == posture.Sbx && r.sbxPath != "")
		if pr := p.Protection; pr != nil && pr.Unenforced != nil && installed && !r.o.FoldersOnly {
			r.add(check("protected files ("+u.label+")"), Warn, *pr.Unenforced, "use --sandbox-backend landlock (Linux) for an agent that should not change git hooks, editor tasks or agent settings in the project")
		}
		if create := p.Spec.ConfigToCreate(); len(create) > 0 && !saidCreate {
			saidCreate = true
			r.add(check("first run"), OK, "a run creates the missing config paths first: "+strings.Join(create, ", "), "")
		}
	}
	return profile, errs
}

// command checks that the agent's command is installed and returns its
// absolute path ("" when it is not).
func (r *run) command(check string, f *agent.Folder, tomlPath string) string {
	name := f.Config.ResolveCommand(r.getenv)
	p, err := r.lookPath(name)
	if err != nil {
		where := "not on PATH"
		if filepath.IsAbs(name) {
			where = "missing or not executable"
		}
		shown := fmt.Sprintf("command = %q", f.Config.Command)
		if name != f.Config.Command {
			shown += " (" + name + ")"
		}
		r.add(check, Warn, fmt.Sprintf("%s: %s: %s: not installed", tomlPath, shown, where), "install "+name+" (or put it on PATH) to run this agent; nothing else needs it")
		return ""
	}
	p = absOr(p)
	detail := p
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
		detail += " -> " + real
	}
	r.add(check, OK, detail, "")
	return p
}

// posture checks what a plain run gets on this host and returns the
// engine it runs in ("" when none: unsandboxed or refused). A refusal
// the grants check reported already is not repeated.
func (r *run) posture(check string, f *agent.Folder, installed bool, reported map[string]bool) engine.ID {
	pst, err := posture.Resolve(posture.Input{
		Agent: f.ID, Nono: f.Nono, Sbx: f.Sbx,
		Host: posture.Host{GOOS: r.goos, NonoFound: r.nonoPath != ""},
	})
	refused := func(why, fix string) {
		st := Fail
		if !installed {
			st = Warn
			why += " (the agent is not installed here, hence only a warning)"
		}
		r.add(check, st, "a plain run of "+f.ID+" is refused: "+why, fix)
	}
	nonoFix := "install nono " + NonoVersionRange + " (nixpkgs `nono`, or `nix run .#agent-sandbox`)"
	if err != nil {
		refused(err.Error(), nonoFix)
		return ""
	}
	if !pst.Sandboxed {
		fix := "add sandbox/nono.json (`{}` gives the default grants) or sandbox/sbx.json to the folder"
		for _, sf := range []*sandboxfile.File{f.Nono, f.Sbx} {
			if sf.OptedOut() {
				fix = "remove {\"sandbox\": false} from " + sf.Path + " unless the agent must run unsandboxed (pass --sandbox to enforce it for one run)"
			}
		}
		r.add(check, Warn, "unsandboxed: "+strings.Join(pst.Warnings, "; "), fix)
		return ""
	}
	fix := "`agent-sandbox --dry-run " + f.ID + "` shows the plan"
	switch {
	case pst.Fallback != "":
		fix = nonoFix + ": the built-in landlock engine cannot enforce this folder's policy yet"
	case pst.Backend == posture.Sbx:
		fix = "install sbx, then once: `sbx login` and `sbx policy init deny-all`"
	}
	p, err := r.build(f, pst)
	if err != nil {
		if !reported[err.Error()] {
			refused(err.Error(), fix)
		}
		return ""
	}
	if p.Refusal != nil {
		refused(*p.Refusal, fix)
		return ""
	}
	if lp, ok := p.Prepared.(*landlockbackend.Prepared); ok {
		// In the view, a kernel without Landlock is the view alone (the
		// landlock check says what that lacks), not a refusal.
		abi, _ := landlock.ABI()
		if _, err := landlock.Plan(lp.Policy); err != nil && !(lp.Engine == landlockbackend.EngineView && abi < 1) {
			refused("the kernel cannot enforce its policy: "+err.Error(), "see the landlock and user namespaces checks")
			return ""
		}
	}
	r.looks = append(r.looks, agentLook{id: f.ID, facts: p.Facts()})
	detail := fmt.Sprintf("%s (%s), network %s", pst.Backend, pst.Reason, pst.Network.Mode)
	if len(pst.Network.AllowDomains) > 0 {
		detail += " (" + strings.Join(pst.Network.AllowDomains, ",") + ")"
	}
	if pst.Network.NoHost() {
		detail += " (" + posture.NoHostNote + ")"
	}
	if pst.Network.Profile != "" {
		detail += ", network profile " + pst.Network.Profile
	}
	if pst.Fallback != "" {
		detail += "; nono not found, so the built-in landlock engine enforces it"
	}
	e, _ := p.EngineInfo()
	detail += "; " + e.Summary()
	if e.ID == engine.Weaker || e.ID == engine.Nono {
		// Chosen by this host (no view here), not by the user.
		r.add(check, Warn, detail, engineFix(e.ID))
		return e.ID
	}
	r.add(check, OK, detail, "")
	return e.ID
}

// engineFix is how to get the namespace view instead of engine id.
func engineFix(id engine.ID) string {
	switch id {
	case engine.Weaker, engine.Nono:
		return "allow unprivileged user namespaces for agent-sandbox (see the user namespaces check) to run in the namespace view"
	}
	return "use --sandbox-backend landlock (Linux) for the namespace view"
}

// closure resolves the command and every executable exec_paths entry with
// pathresolve; anything missing fails.
func (r *run) closure(check string, f *agent.Folder, tomlPath, cmdPath string) {
	type prog struct{ label, path string }
	var progs []prog
	if cmdPath != "" {
		progs = append(progs, prog{fmt.Sprintf("command = %q", f.Config.Command), cmdPath})
	}
	for i, p := range f.Config.ExecPaths {
		if execProblem(p) == "" {
			progs = append(progs, prog{fmt.Sprintf("exec_paths[%d] = %q", i, p), p})
		}
	}
	if len(progs) == 0 {
		return
	}
	files, dirs := map[string]bool{}, map[string]bool{}
	bad := false
	for _, p := range progs {
		res, err := pathresolve.Resolve(p.path, pathresolve.Options{PATH: r.getenv("PATH")})
		if err != nil {
			bad = true
			r.add(check, Fail, fmt.Sprintf("%s: %s: %v", tomlPath, p.label, err), closureFix(p.path))
			continue
		}
		for _, m := range res.Missing {
			bad = true
			r.add(check, Fail, fmt.Sprintf("%s: %s: %s needs %s, which is missing (%s): it cannot start inside the sandbox, which grants only the files found and strips LD_LIBRARY_PATH", tomlPath, p.label, m.NeededBy, m.Name, m.Reason), closureFix(m.NeededBy))
		}
		for _, x := range res.Files {
			files[x] = true
		}
		for _, d := range res.Dirs {
			dirs[d] = true
		}
	}
	if !bad {
		r.add(check, OK, fmt.Sprintf("%d program(s) resolve completely: %d files in %d directories", len(progs), len(files), len(dirs)), "")
	}
}

func closureFix(p string) string {
	if strings.HasPrefix(p, "/nix/store/") {
		return storeFix
	}
	return "reinstall the package that provides " + p + " (or install the missing library where its loader finds it)"
}

// execProblem says why an exec_paths entry is not an executable file, or
// "" when it is one.
func execProblem(p string) string {
	st, err := os.Stat(p)
	switch {
	case err != nil && os.IsNotExist(err):
		if strings.HasPrefix(p, "/nix/store/") {
			if _, rootErr := os.Lstat(storeRoot(p)); rootErr != nil {
				return "does not exist: store path " + storeRoot(p) + " is stale (garbage-collected, or rendered from an older nixpkgs)"
			}
		}
		return "does not exist"
	case err != nil:
		return err.Error()
	case st.IsDir():
		return "is a directory; exec_paths names programs"
	case !st.Mode().IsRegular():
		return "is not a regular file"
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("is not executable (mode %04o)", st.Mode().Perm())
	}
	return ""
}

// execPaths checks that every exec_paths entry is an executable file.
func (r *run) execPaths(check string, f *agent.Folder, tomlPath string) {
	bad := false
	for i, p := range f.Config.ExecPaths {
		why := execProblem(p)
		if why == "" {
			continue
		}
		bad = true
		fix := "install the program, or remove the entry from exec_paths"
		switch {
		case strings.HasPrefix(p, "/nix/store/") && strings.Contains(why, "does not exist"):
			fix = storeFix
		case strings.Contains(why, "not executable"):
			fix = "`chmod +x " + p + "`, or remove the entry from exec_paths"
		}
		r.add(check, Fail, fmt.Sprintf("%s: exec_paths[%d] = %q %s", tomlPath, i, p, why), fix)
	}
	if !bad {
		n := len(f.Config.ExecPaths)
		detail := "none declared"
		if n > 0 {
			detail = fmt.Sprintf("%d entries exist and are executable", n)
		}
		r.add(check, OK, detail, "")
	}
}

// storePaths checks that every /nix/store path in the folder files and the
// generated profile exists (fail otherwise), and, when onDisk is set, in the
// profile an earlier run left there (warn: the next run rewrites it).
func (r *run) storePaths(check string, files []folderFile, profile *nono.Profile, onDisk string) {
	// A path named in several places (agent.toml and the generated profile
	// it turns into) is counted once.
	seen := map[string]bool{}
	bad := false
	scan := func(display string, raw []byte, values []stringAt, st Status, fix string) {
		for _, ref := range findStorePaths(raw, values) {
			seen[ref.path] = true
			if why := r.storeProblem(ref.path); why != "" {
				bad = true
				r.add(check, st, describeRef(display, ref)+": "+why, fix)
			}
		}
	}
	for _, ff := range files {
		var values []stringAt
		if ff.rel == "agent.toml" {
			values = tomlStrings(ff.raw)
		} else {
			values = jsonStrings(ff.raw, true)
		}
		scan(ff.display, ff.raw, values, Fail, storeFix)
	}
	if profile != nil {
		if b, err := nono.Marshal(*profile); err == nil {
			scan("generated nono profile", nil, jsonStrings(b, false), Fail, storeFix)
		}
	}
	if onDisk != "" {
		if b, err := os.ReadFile(onDisk); err == nil {
			scan(onDisk, b, jsonStrings(b, true), Warn, "nothing to do if the folder's own paths are current: the next nono run rewrites this file (or delete it)")
		}
	}
	if bad {
		return
	}
	if len(seen) == 0 {
		r.add(check, OK, "no /nix/store paths", "")
		return
	}
	r.add(check, OK, fmt.Sprintf("all %d /nix/store paths exist", len(seen)), "")
}

// missingCredentials is the one line, for every agent checked, that names
// the [[credentials]] sources without a value and the agents that name
// each.
func (r *run) missingCredentials() {
	if len(r.missingOrder) == 0 {
		return
	}
	parts := make([]string, len(r.missingOrder))
	for i, m := range r.missingOrder {
		parts[i] = fmt.Sprintf("%s; named by %s)", strings.TrimSuffix(m, ")"), strings.Join(r.missingCreds[m], ", "))
	}
	r.add("credentials", Warn, "no value for "+strings.Join(parts, "; ")+"; with an allow list the built-in engine's broker injects only keys it can read",
		"set the variable or create the file for the agents that need the key; a subscription login needs none")
}

// credentials checks that the source of each [[credentials]] key can be
// read (a command is not run: it may prompt or cost): a variable that is
// set, a readable file. A missing value is a warning (that agent gets no
// key and no route), never a failure; missingCredentials names them all
// in one line.
//
// eng is the engine of a plain run ("" when none): one that cannot keep
// the key out says so instead.
func (r *run) credentials(check string, f *agent.Folder, tomlPath string, eng engine.ID) {
	if len(f.Config.Credentials) == 0 {
		return
	}
	var ok, missing []string
	for _, c := range f.Config.Credentials {
		src := c.Source
		if src == "" {
			src = "env:" + c.Env
		}
		kind, arg, _ := strings.Cut(src, ":")
		switch kind {
		case "env":
			if r.getenv(arg) == "" {
				missing = append(missing, fmt.Sprintf("%s (source %s: not set)", c.Env, src))
				continue
			}
		case "file":
			p := arg
			if p == "~" || strings.HasPrefix(p, "~/") {
				p = filepath.Join(r.home.Dir, strings.TrimPrefix(p, "~"))
			}
			if fh, err := os.Open(p); err != nil {
				missing = append(missing, fmt.Sprintf("%s (source %s: %v)", c.Env, src, err))
				continue
			} else {
				fh.Close()
			}
		case "command":
			ok = append(ok, c.Env+" (source "+src+": run when a run starts, not by doctor)")
			continue
		}
		ok = append(ok, c.Env+" (source "+src+")")
	}
	for _, m := range missing {
		// One line for every agent (missingCredentials): several
		// folders name the same key.
		if _, seen := r.missingCreds[m]; !seen {
			r.missingOrder = append(r.missingOrder, m)
		}
		r.missingCreds[m] = append(r.missingCreds[m], f.ID)
	}
	if len(ok) == 0 {
		return
	}
	if c := engine.Must(orView(eng)).Gives[engine.Credentials]; eng != "" && c.Level != engine.Yes {
		r.add(check, Warn, fmt.Sprintf("%s: a plain run uses engine %s, without the broker's credential routes (%s): %s", tomlPath, engine.Must(eng).Name, c.Note, strings.Join(ok, ", ")), engineFix(eng))
		return
	}
	r.add(check, OK, fmt.Sprintf("injected by the broker with an allow list (the agent holds a phantom): %s", strings.Join(ok, ", ")), "")
}
