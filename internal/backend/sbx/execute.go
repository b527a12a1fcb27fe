package sbx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// ProbeTimeout bounds the read-only sbx queries (ls, policy ls, version
// probes). Create and install are not bounded: the first microVM start and
// npm can be slow, and Ctrl-C stops them.
var ProbeTimeout = 2 * time.Minute

// Banner is printed on stderr before the agent starts (launch.Banner: on
// a terminal only, without the emoji when TERM=dumb), unless --verbose or
// --quiet.
const Banner = "\U0001F512 Sandbox Active (sbx)"

// Execute materialises a prepared run and returns the exit status: the
// agent's own once it started, 125 when a setup step failed (with the
// command that fixes it). In order: sbx is signed in (`sbx ls -q`) and the
// global policy is initialised (`sbx policy ls`); the state dir and missing
// config dirs are created; `sbx create` ("already exists" = attach); the
// per-sandbox rules carried from earlier runs are checked; the policy rule;
// provisioning pinned to the host version; the pi extension; the banner;
// and `sbx exec`, with -t only when stdio.Out is a terminal.
func Execute(p Prepared, s spec.Spec, stdio launch.Stdio) int {
	r := runner{path: p.Path, stdio: stdio, verbose: p.Verbose}
	fail := func(err error) int {
		diag.Errorf(stdio.Err, "%v", err)
		return launch.ExitRefused
	}
	warn := func(msg string) { diag.Warnf(stdio.Err, "%s", msg) }
	if p.Refusal != "" {
		return fail(errors.New(p.Refusal))
	}
	if err := r.machineReady(); err != nil {
		return fail(err)
	}
	for _, d := range p.Create {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fail(fmt.Errorf("cannot create %s for the sandbox mount: %v", d, err))
		}
	}
	rec, err := r.createOrAttach(p, warn)
	if err != nil {
		return fail(err)
	}
	if err := r.networkRule(p, rec); err != nil {
		return fail(err)
	}
	if p.Install != nil {
		if code := r.provision(p, warn); code != 0 {
			return code
		}
	}
	if p.PiExtension != "" {
		if err := WritePiExtension(p.PiExtension); err != nil {
			return fail(fmt.Errorf("cannot write the pi extension: %v", err))
		}
	}
	if !p.Verbose && !p.Quiet {
		launch.Banner(stdio.Err, "sbx")
	}
	argv := p.ExecArgv(launch.IsTerminal(stdio.Out))
	r.echo(argv)
	// The guest writes the host's files through its mounts: the ledger
	// is watched and audited on the host. The microVM is kept between
	// runs: the quiesce step ends the host side only, and the audit says
	// so.
	return launch.Lifecycle{Argv: argv, Env: os.Environ(), Dir: p.Workdir, Stdio: stdio, Guard: backend.Guard(p.Spec), Remote: "the sbx microVM " + strconv.Quote(p.Name),
		Session: sessionHandlers(p, stdio)}.Execute()
}

// machineReady checks the once-per-machine setup: sbx is signed in and
// the global network policy is initialised.
func (r runner) machineReady() error {
	if res, err := r.capture(ProbeTimeout, "ls", "-q"); err != nil || res.code != 0 {
		return fmt.Errorf("sbx cannot list sandboxes (`sbx ls -q` %s)%s; if you are not signed in, run `sbx login` (`sbx diagnose` checks the installation)", describe(res, err), quoteOutput(res))
	}
	if res, err := r.capture(ProbeTimeout, "policy", "ls"); err != nil || res.code != 0 || policyUninitialised(res) {
		return fmt.Errorf("the global sbx network policy is not initialised or not readable (`sbx policy ls` %s)%s; run `sbx policy init deny-all` once on this machine (or allow-all / balanced)", describe(res, err), quoteOutput(res))
	}
	return nil
}

// createOrAttach creates the sandbox, or attaches to the one that exists,
// checks the rules carried from earlier runs and records the sandbox.
func (r runner) createOrAttach(p Prepared, warn func(string)) (*Record, error) {
	rec, err := LoadRecord(p.StateRoot, p.Name)
	if err != nil {
		return nil, err
	}
	res, err := r.capture(0, p.CreateArgv()[1:]...)
	if err != nil {
		return nil, fmt.Errorf("`sbx create` could not run: %v", err)
	}
	attached := false
	if res.code != 0 {
		if !alreadyExists(res) {
			return nil, fmt.Errorf("`sbx create` failed (%s)%s; check the mounts above exist and `sbx ls`, or run `sbx diagnose`", describe(res, nil), quoteOutput(res))
		}
		attached = true
	}
	refusal, w := checkHistory(rec, attached, p.Mode, p.Rule, p.Name)
	if w != "" {
		warn(w)
	}
	if refusal != "" {
		return nil, errors.New(refusal)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if rec == nil || !attached {
		rec = &Record{Created: now, UnknownRules: attached}
	}
	rec.Name, rec.Agent, rec.AgentDir, rec.Workdir, rec.Mounts, rec.LastUsed = p.Name, p.AgentID, p.AgentDir, p.Workdir, p.Mounts, now
	if err := SaveRecord(p.StateRoot, *rec); err != nil {
		return nil, fmt.Errorf("cannot record sandbox %s: %v", p.Name, err)
	}
	return rec, nil
}

// networkRule applies the per-sandbox network rule, recorded before it is
// applied so that the record never carries less than the sandbox.
func (r runner) networkRule(p Prepared, rec *Record) error {
	if p.Rule == nil {
		return nil
	}
	if p.Rule.Decision == "deny" {
		rec.DenyAll = true
	} else {
		rec.Allowed = uniq.Sorted(append(rec.Allowed, strings.Split(p.Rule.Resources, ",")...))
	}
	if err := SaveRecord(p.StateRoot, *rec); err != nil {
		return fmt.Errorf("cannot record sandbox %s: %v", p.Name, err)
	}
	res, err := r.capture(ProbeTimeout, p.Rule.Argv(p.Path, p.Name)[1:]...)
	if err != nil || res.code != 0 {
		return fmt.Errorf("`sbx policy %s network --sandbox %s` failed (%s)%s; this sbx may name the sandbox positionally (older releases): check `sbx policy %s network --help` and update sbx; the run does not start without its network rule", p.Rule.Decision, p.Name, describe(res, err), quoteOutput(res), p.Rule.Decision)
	}
	return nil
}

// provision installs the agent in the guest when its version differs from
// the host's, pinned to the host's version.
func (r runner) provision(p Prepared, warn func(string)) int {
	hostVer, hostErr := r.hostVersion(p.Install.HostVersion, append(p.Spec.Writable(), p.Spec.StateDir))
	guestVer := ""
	if res, err := r.capture(ProbeTimeout, p.GuestVersionArgv()[1:]...); err == nil && res.code == 0 {
		guestVer = VersionToken(res.stdout, res.stderr)
	}
	switch {
	case hostVer != "" && guestVer == hostVer:
		return 0
	case hostVer == "" && guestVer != "":
		warn(fmt.Sprintf("sbx: cannot read the host version of %s (%v); keeping the guest's %s", p.Install.Package, hostErr, guestVer))
		return 0
	case hostVer == "":
		warn(fmt.Sprintf("sbx: cannot read the host version of %s (%v); installing the latest in the guest, unpinned", p.Install.Package, hostErr))
	}
	pkg := PinnedPackage(p.Install.Package, hostVer)
	have := guestVer
	if have == "" {
		have = "none"
	}
	diag.Notef(r.stdio.Err, "installing %s in sandbox %s (guest has %s)", pkg, p.Name, have)
	argv := p.InstallArgv(pkg)
	code, err := r.stream(argv[1:]...)
	if err != nil || code != 0 {
		diag.Errorf(r.stdio.Err, "in-guest install `%s` failed (%s); the guest needs node/npm and network access to registry.npmjs.org (an --offline or allowlist run cannot install: run once with the registry allowed, or install it by hand with `sbx exec -it %s sh`)", strings.Join(argv[1:], " "), describe(result{code: code}, err), p.Name)
		return launch.ExitRefused
	}
	if hostVer != "" {
		if res, err := r.capture(ProbeTimeout, p.GuestVersionArgv()[1:]...); err == nil {
			if got := VersionToken(res.stdout, res.stderr); got != hostVer {
				warn(fmt.Sprintf("sbx: after installing %s the guest reports version %q", pkg, got))
			}
		}
	}
	return 0
}

// hostVersion runs the version command on the host and reads both streams.
// A program found inside one of writable (what the agent can write) is not
// executed: the agent could have planted it there, and this call runs
// outside the sandbox.
func (r runner) hostVersion(argv []string, writable []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("no version_command")
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return "", fmt.Errorf("`%s`: %v", strings.Join(argv, " "), err)
	}
	if abs, err := filepath.Abs(prog); err == nil {
		prog = abs
	}
	for _, loc := range []string{prog, grant.Canonical(prog)} {
		for _, w := range writable {
			if grant.Within(loc, w) {
				return "", fmt.Errorf("%s lies inside %s, which the sandboxed agent can write, so it is not executed on the host", loc, w)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	// The program checked above, not a second PATH lookup.
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if v := VersionToken(out.String(), errb.String()); v != "" {
		return v, nil
	}
	if err != nil {
		return "", fmt.Errorf("`%s`: %v", strings.Join(argv, " "), err)
	}
	return "", fmt.Errorf("`%s` printed no version", strings.Join(argv, " "))
}

// policyUninitialised spots a `sbx policy ls` that succeeded but says the
// global policy still has to be chosen.
func policyUninitialised(res result) bool {
	out := strings.ToLower(res.stdout + res.stderr)
	for _, s := range []string{"not initialized", "not initialised", "no default policy", "policy init", "set-default"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

func alreadyExists(res result) bool {
	return strings.Contains(strings.ToLower(res.stdout+res.stderr), "already exists")
}

// result is a finished sbx command.
type result struct {
	code           int
	stdout, stderr string
}

func describe(res result, err error) string {
	if err != nil {
		return err.Error()
	}
	if res.code > 128 {
		return fmt.Sprintf("exit status %d, killed by signal %d", res.code, res.code-128)
	}
	return fmt.Sprintf("exit status %d", res.code)
}

// quoteOutput shows what sbx said, trimmed, for an error message.
func quoteOutput(res result) string {
	out := strings.TrimSpace(res.stderr)
	if out == "" {
		out = strings.TrimSpace(res.stdout)
	}
	if out == "" {
		return ""
	}
	if len(out) > 2000 {
		out = out[:2000] + "..."
	}
	return ": " + strings.TrimSuffix(out, ".")
}

// runner runs sbx setup commands: stdin empty (so a prompt can never hang a
// run), signals forwarded so that no child outlives agent-sandbox.
type runner struct {
	path    string
	stdio   launch.Stdio
	verbose bool
}

func (r runner) echo(argv []string) {
	if r.verbose {
		diag.Notef(r.stdio.Err, "+ %s", strings.Join(argv, " "))
	}
}

// capture runs sbx with output captured; timeout 0 means none.
func (r runner) capture(timeout time.Duration, args ...string) (result, error) {
	var out, errb bytes.Buffer
	code, err := r.run(timeout, &out, &errb, args...)
	return result{code: code, stdout: out.String(), stderr: errb.String()}, err
}

// stream runs sbx with its output on stderr (the agent's stdout stays the
// agent's).
func (r runner) stream(args ...string) (int, error) {
	return r.run(0, r.stdio.Err, r.stdio.Err, args...)
}

func (r runner) run(timeout time.Duration, stdout, stderr io.Writer, args ...string) (int, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	argv := append([]string{r.path}, args...)
	r.echo(argv)
	cmd := exec.CommandContext(ctx, r.path, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	got, err := launch.Forward(sigs, func() *os.Process { return cmd.Process }, nil, cmd.Wait)
	if got != nil {
		if n, ok := got.(syscall.Signal); ok {
			return 128 + int(n), fmt.Errorf("interrupted by %v", got)
		}
		return launch.ExitRefused, fmt.Errorf("interrupted by %v", got)
	}
	if ctx.Err() == context.DeadlineExceeded {
		return -1, fmt.Errorf("no answer within %v", timeout)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1, err
	}
	return launch.ExitStatus(err), nil
}

// List returns the agent-sandbox-* sandboxes `sbx ls -q` lists.
func List(sbxPath string) ([]string, error) {
	r := runner{path: sbxPath, stdio: launch.Stdio{Err: io.Discard}}
	res, err := r.capture(ProbeTimeout, "ls", "-q")
	if err != nil || res.code != 0 {
		return nil, fmt.Errorf("`sbx ls -q` %s%s; if you are not signed in, run `sbx login`", describe(res, err), quoteOutput(res))
	}
	return ParseList(res.stdout), nil
}

// Remove removes a sandbox with `sbx rm -f NAME` (no confirmation prompt)
// and then its record.
func Remove(sbxPath, stateRoot, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%q is not an agent-sandbox sandbox name", name)
	}
	r := runner{path: sbxPath, stdio: launch.Stdio{Err: io.Discard}}
	res, err := r.capture(0, "rm", "-f", name)
	if err != nil || res.code != 0 {
		return fmt.Errorf("`sbx rm -f %s` %s%s", name, describe(res, err), quoteOutput(res))
	}
	return DeleteRecord(stateRoot, name)
}
