package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/agent"
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/cli"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/plan"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/suggest"
)

// runAgent is `agent-sandbox [run flags] AGENT [ARGS...]`.
func runAgent(e env, r cli.Run) int {
	if !r.DryRun {
		launch.WarmUp()
		// agent-sandbox's own files do not depend on a umask that
		// clears the owner's bits; the agent gets the caller's.
		launch.OwnUmask()
	}
	workdir, folder, pst, err := resolveRun(e, r)
	if err != nil {
		return refuseRun(e, r, workdir, folder, pst, err)
	}
	if !r.DryRun {
		// A started session of this workdir that ended on its idle
		// timeout left its findings: printed once, here (for a start,
		// by start).
		printPending(e, workdir)
	}
	var wt *plan.WorktreeInput
	if r.Worktree {
		held, in, err := startWorktree(e, r, folder, *pst, workdir)
		if err != nil {
			return refuseRun(e, r, workdir, folder, pst, err)
		}
		defer held.Release()
		wt, workdir = in, in.Tree
	}
	var early backend.Early
	if !r.DryRun {
		// What the backend can start before its run is planned (the
		// built-in engine's init) starts now; it waits for the plan.
		if early = startRun(e, *pst); early != nil {
			defer early.Abort()
		}
	}
	p, err := plan.Build(plan.Input{
		Folder: folder, Posture: *pst, Home: e.home, Workdir: workdir, Args: r.Args,
		Getenv: e.getenv, LookPath: e.lookPath, Protected: e.lookup(workdir).Paths(),
		NixStore: plan.NixStore(), Verbose: r.Verbose, Quiet: r.Quiet, TTY: launch.IsTerminal(os.Stdout),
		RunRead: cliPaths(r.Read), RunWrite: cliPaths(r.Write),
		AllowEdit: r.AllowEdit, AllowUserns: r.AllowUserns, Early: early, Worktree: wt, Started: e.started,
	})
	if err != nil {
		return refuseRun(e, r, workdir, folder, pst, err)
	}
	if !p.Spec.CommandFound && (p.Backend == nil || *p.Backend != "sbx") && !r.DryRun {
		// One line: the command is missing (the plan's warning says the same).
		diag.Errorf(e.stdio.Err, "%s", folder.NotInstalled(p.Spec.Argv[0]))
		return launch.ExitNotFound
	}
	for _, w := range p.Warnings {
		if r.Quiet && slices.Contains(p.Repeating, w) {
			continue
		}
		fmt.Fprintln(e.stdio.Err, w)
	}
	if r.DryRun {
		return dryRun(e, r, p)
	}
	if r.Verbose {
		describe(e, p)
	}
	if p.Refusal != nil {
		return fail(e.stdio.Err, errors.New(*p.Refusal))
	}
	if e.started != nil {
		if why := startRefusal(p); why != "" {
			return fail(e.stdio.Err, errors.New(why))
		}
	}
	if line := p.WorktreeLine(); line != "" {
		diag.Notef(e.stdio.Err, "%s", line)
	}
	code := execute(e, r, folder, workdir, p)
	if hint := failureHint(p, r, code); hint != "" {
		diag.Notef(e.stdio.Err, "%s", hint)
	}
	return code
}

// startRun prepares the process of a real run with posture pst and
// returns what its backend starts before the run is planned (nil when
// nothing).
func startRun(e env, pst posture.Posture) backend.Early {
	if pst.Sandboxed {
		// A descriptor the caller left open (`agent-sandbox ... 7<~/.ssh/id_ed25519`)
		// must not reach a sandboxed agent, whatever the backend.
		launch.CloseInherited()
	}
	if !(pst.Sandboxed && pst.Backend == posture.Sbx) {
		// The sbx backend registers signals of its own for its setup
		// commands; every other run registers the agent's now.
		launch.RegisterSignals()
	}
	return plan.Prestart(pst, e.stdio)
}

// dryRun prints the plan p (text, or JSON with --json) and returns the
// status: 125 when a real run would refuse.
func dryRun(e env, r cli.Run, p *plan.Plan) int {
	write := p.WriteText
	if r.JSON {
		write = p.WriteJSON
	}
	if err := write(e.stdio.Out); err != nil {
		return fail(e.stdio.Err, err)
	}
	if p.Refusal != nil {
		// The plan is printed; the status says the real run would not start.
		return fail(e.stdio.Err, fmt.Errorf("a real run would refuse: %s", *p.Refusal))
	}
	return 0
}

// execute runs the plan between the run's checkpoints: the one before is
// taken before anything of the run touches the workdir (Execute's Prepare
// makes the placeholders), and the run is recorded once its agent is gone.
func execute(e env, r cli.Run, folder *agent.Folder, workdir string, p *plan.Plan) int {
	cp, err := beginCheckpoint(e, r, folder, workdir)
	if err != nil {
		return fail(e.stdio.Err, err)
	}
	code := p.Prepared.Execute(e.stdio)
	cp.End(code)
	return code
}

// resolveRun finds the run's working directory, agent folder and posture;
// on an error, what was found before it (for refuseRun).
func resolveRun(e env, r cli.Run) (string, *agent.Folder, *posture.Posture, error) {
	workdir, err := resolveWorkdir(r.Workdir)
	if err != nil {
		return "", nil, nil, err
	}
	folder, warn, err := findAgent(r, e.lookup(workdir))
	if err != nil {
		return workdir, nil, nil, err
	}
	_, nonoErr := e.lookPath("nono")
	pst, err := posture.Resolve(posture.Input{
		Agent: folder.ID,
		Flags: r.Posture,
		Nono:  folder.Nono,
		Sbx:   folder.Sbx,
		Host:  posture.Host{GOOS: runtime.GOOS, NonoFound: nonoErr == nil},
	})
	if err != nil {
		return workdir, folder, nil, err
	}
	if warn != "" {
		pst.Warnings = append([]string{warn}, pst.Warnings...)
	}
	return workdir, folder, &pst, nil
}

// refuseRun ends a run refused before its plan exists (exit 125, one
// error line); --dry-run --json still prints a plan, with refusal saying
// why and what was known (folder, pst may be nil).
func refuseRun(e env, r cli.Run, workdir string, folder *agent.Folder, pst *posture.Posture, err error) int {
	if r.DryRun && r.JSON {
		name := r.Agent
		if r.Program != "" {
			name = r.Program
		}
		if werr := plan.Refused(name, folder, pst, workdir, err.Error()).WriteJSON(e.stdio.Out); werr != nil {
			return fail(e.stdio.Err, werr)
		}
	}
	return fail(e.stdio.Err, err)
}

// failureHint is the line printed after a sandboxed run that failed: the
// sandbox may be the cause, and `agent-sandbox why` says. None for a
// successful or unsandboxed run, for agent-sandbox's own refusal (125,
// already explained), for a command that is not found (127, explained too)
// and for an interrupt (130).
func failureHint(p *plan.Plan, r cli.Run, code int) string {
	if r.Quiet || !p.Sandboxed || !p.Spec.CommandFound || code == 0 || code == launch.ExitRefused || code == 130 {
		return ""
	}
	agentArg, flagArg := "", ""
	if r.Program == "" {
		agentArg = " " + plan.Quote([]string{r.Agent})
	}
	// The run flags that change the answer come along.
	var flags []string
	if r.Workdir != "" {
		flags = append(flags, "--workdir", r.Workdir)
	}
	if r.Posture.Offline {
		flags = append(flags, "--offline")
	}
	for _, h := range r.Posture.AllowHosts {
		flags = append(flags, "--allow-host", h)
	}
	if r.Posture.NetworkOpen {
		flags = append(flags, "--network", "open")
	}
	if r.Posture.Backend != "" {
		flags = append(flags, "--sandbox-backend", string(r.Posture.Backend))
	}
	if len(flags) > 0 {
		flagArg = plan.Quote(flags) + " "
	}
	where := "the sandbox"
	if e, ok := p.EngineInfo(); ok {
		where += " (" + e.Name + ")"
	}
	return fmt.Sprintf("%s exited %d inside %s; if the sandbox denied it something, `agent-sandbox why %sPATH%s` (--write, --exec, or --host HOST) says why and what to add where", p.Agent, code, where, flagArg, agentArg)
}

// findAgent is the folder of the run: the agent named, or for
// `agent-sandbox run -- CMD` the shell agent's policy running CMD.
func findAgent(r cli.Run, lookup agent.Lookup) (*agent.Folder, string, error) {
	if r.Program != "" {
		f, err := agent.ForCommand(r.Program)
		return f, "", err
	}
	f, warn, err := agent.Find(r.Agent, lookup)
	var nf *agent.NotFoundError
	if errors.As(err, &nf) {
		if sub := suggest.Closest(r.Agent, cli.Subcommands); sub != "" {
			err = fmt.Errorf("%q is neither a subcommand nor an agent (did you mean `agent-sandbox %s`?): %v", r.Agent, sub, err)
		}
	}
	return f, warn, err
}

// cliPaths makes the relative paths of --read and --write absolute from
// the current directory (the shell's meaning of a path typed on the command
// line); ~/ and $ forms are left to the grant rules, which expand or refuse
// them.
func cliPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") && !strings.Contains(p, "$") {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		out = append(out, p)
	}
	return out
}

// describe prints the posture for --verbose.
func describe(e env, p *plan.Plan) {
	backend := "none (unsandboxed)"
	if p.Backend != nil {
		backend = *p.Backend
	}
	fmt.Fprintf(e.stdio.Err, "agent-sandbox: %s from %s; backend %s (%s); network %s", p.Agent, p.AgentFolder, backend, p.Reason, p.Network.Mode)
	if len(p.Network.AllowDomains) > 0 {
		fmt.Fprintf(e.stdio.Err, " [%s]", strings.Join(p.Network.AllowDomains, " "))
	}
	if p.Posture.Network.NoHost() {
		fmt.Fprintf(e.stdio.Err, " (%s)", posture.NoHostNote)
	}
	fmt.Fprintln(e.stdio.Err)
	if p.Sandboxed {
		fmt.Fprintf(e.stdio.Err, "agent-sandbox: read-write %s; read-only %s\n", strings.Join(p.Filesystem.Allow, " "), strings.Join(p.Filesystem.Read, " "))
	}
}

// resolveWorkdir returns the canonical working directory.
func resolveWorkdir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("cannot read the current directory: %v", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("--workdir %s: %v", dir, errors.Unwrap(err))
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("--workdir %s: not a directory", dir)
	}
	return real, nil
}
