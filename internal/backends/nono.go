package backends

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/backend/nono"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// nonoEngine is a run whose backend resolves to nono, on Linux. Where the
// built-in engine can build its namespace view, nono runs inside it
// (landlock.EngineNonoInView): installing nono never makes a run weaker
// than the view. Where no view can be built (user namespaces off), nono
// runs alone, or the weaker sandbox when the user accepted it
// (landlock.WeakerSandboxEnv), since it enforces more than nono alone
// (chooseAlone).
type nonoEngine struct {
	nono   nono.Backend
	view   landlock.Backend
	getenv func(string) string
	// tty says the agent's output is a terminal: nono alone's supervisor
	// then needs a Unix socket for its terminal proxy.
	tty bool
	// expected is view.Expected (a variable for the tests).
	expected func() (bool, string)
}

// SystemCovers is the built-in engine's (backend.Toolchains): the view
// grants the toolchains on PATH and layers their caches, and nono's
// profile grants them again.
func (nonoEngine) SystemCovers(p string) bool { return landlock.SystemCovers(p) }

// Prestart starts the view's init early, as the built-in engine does
// (backend.Prestarter); on a host without a view it starts nothing.
func (b nonoEngine) Prestart(mode posture.NetMode, stdio launch.Stdio) backend.Early {
	return b.view.Prestart(mode, stdio)
}

// Prepare composes nono inside the view, or chooses nono alone or the
// weaker sandbox where no view can be built.
func (b nonoEngine) Prepare(s spec.Spec) (backend.Prepared, error) {
	expected := b.expected
	if expected == nil {
		expected = view.Expected
	}
	if ok, why := expected(); !ok {
		return b.alone(s, why)
	}
	o := b.nono.Options
	o.InView = true
	np, err := nono.Prepare(s, o)
	if err != nil {
		return nil, err
	}
	exec := np.Steps[0].Argv[0]
	if real, err := filepath.EvalSymlinks(exec); err == nil {
		exec = real
	}
	var execs []string
	if filepath.IsAbs(exec) {
		execs = []string{exec} // else nono is missing: refused below
	}
	shownProfile := nono.InViewProfilePath(s)
	inner := &landlock.Inner{
		Name:  "nono",
		Stdio: nono.PipedFiles,
		Exec:  execs,
		Shown: func(argv []string) spec.Command {
			return spec.Command{
				Argv: nono.InViewArgv(np, shownProfile, argv),
				Env:  []string{"XDG_STATE_HOME=" + filepath.Join(filepath.Dir(shownProfile), "state"), "XDG_CACHE_HOME=" + filepath.Join(filepath.Dir(shownProfile), "cache"), "NONO_NO_UPDATE_CHECK=1"},
				Note: "nono's profile and state are the run's own, in a fresh directory of " + nono.RunsDir(s) + " (outside every grant, read-only in the view but for nono's state, removed after the run)",
			}
		},
		Comments: []string{
			"nono: " + exec + " (read-only in the view), profile " + shownProfile + ": the run's grants, and again what the view gives the agent (its TMPDIR, /tmp, /var/tmp, /dev/shm, the caches' layers, the toolchains); the environment's names as allow_vars",
			"nono's network: unrestricted inside the view, whose network namespace and egress broker carry out the network policy and the credential routes (nono's own proxy would have no route out, and its block would refuse the sandbox's own loopback)",
		},
		JSON: map[string]any{"profile": &np.Profile, "profile_path": shownProfile},
		Start: func(r landlock.InnerRun) (landlock.InnerStart, error) {
			st, err := nono.StartInView(np, nono.InViewRun{Argv: r.Argv, Env: r.Env, Allow: r.Allow, Read: r.Read, ReadFiles: r.ReadFiles})
			return landlock.InnerStart{Argv: st.Argv, Env: st.Env, ReadOnly: st.ReadOnly, Writable: st.Writable, Cleanup: st.Cleanup}, err
		},
	}
	v := b.view
	v.Inner, v.View = inner, expected
	p, err := v.Prepare(s)
	if err != nil {
		return nil, err
	}
	if lp, ok := p.(*landlock.Prepared); ok && lp.Refusal == "" {
		lp.Refusal = np.Refusal // nono missing
	}
	return p, nil
}

// alone is a nono run on a host where no view can be built: the weaker
// sandbox where the user accepted it, which enforces more than nono alone
// (the egress broker and its credential routes, an allow list kept to its
// ports, seccomp's refusal of host Unix sockets); otherwise nono alone,
// which gets no routed credential.
func (b nonoEngine) alone(s spec.Spec, why string) (backend.Prepared, error) {
	if landlock.WeakerSandboxAllowed() {
		v := b.view
		v.View = func() (bool, string) { return false, why }
		p, err := v.Prepare(s)
		if err != nil {
			return nil, err
		}
		if lp, ok := p.(*landlock.Prepared); ok {
			lp.Warnings = append([]string{fmt.Sprintf("nono: no namespace view on this host (%s): the weaker sandbox runs instead of nono alone, because it enforces more (its egress broker keeps the API keys out of the agent and the allow list to its ports; its seccomp refuses host Unix sockets and keyrings)", why)}, lp.Warnings...)
		}
		return p, nil
	}
	p, err := nonoAlone{nono: b.nono, getenv: b.getenv, linux: true}.prepare(s)
	if err != nil {
		return nil, err
	}
	p.Warnings = append([]string{fmt.Sprintf("nono runs alone: no namespace view on this host (%s), so no PID or network namespace, protected files are writable and no egress broker routes credentials; %s=1 runs the weaker sandbox instead, which enforces more", why, landlock.WeakerSandboxEnv)}, p.Warnings...)
	if b.tty && p.Refusal == "" && nono.Filter(*p, s).DenyUnixSockets {
		p.Refusal = fmt.Sprintf("nono alone cannot start on a terminal here: its supervisor's terminal proxy needs a Unix socket, which agent-sandbox's seccomp layer under nono refuses (so that the agent cannot reach the host's sockets, the Docker daemon's among them); set %s=1 for the weaker sandbox, which enforces more than nono alone and runs on a terminal, or run without a terminal (output to a pipe or a file)", landlock.WeakerSandboxEnv)
	}
	return p, nil
}

// nonoAlone is nono run by itself (nono.EngineAlone): on macOS, and on a
// Linux host without a view. agent-sandbox has no credential route there,
// so a routed credential's variable is not passed (withoutRoutedKeys),
// and one line says so.
type nonoAlone struct {
	nono   nono.Backend
	getenv func(string) string
	// linux says the weaker sandbox is the other choice (Linux only).
	linux bool
}

// Prepare is prepare as a backend.Prepared.
func (b nonoAlone) Prepare(s spec.Spec) (backend.Prepared, error) {
	p, err := b.prepare(s)
	return backend.Of(p, err)
}

func (b nonoAlone) prepare(s spec.Spec) (*nono.Prepared, error) {
	s, dropped := withoutRoutedKeys(s, b.getenv)
	np, err := nono.Prepare(s, b.nono.Options)
	if err != nil {
		return nil, err
	}
	if len(dropped) > 0 {
		fix := "log in inside the agent instead (a subscription login needs no key), or use an open network (--network open), where the key is the agent's by design"
		if b.linux {
			fix = fmt.Sprintf("log in inside the agent instead, or set %s=1 for the weaker sandbox, whose broker injects the key", landlock.WeakerSandboxEnv)
		}
		np.Warnings = append(np.Warnings, fmt.Sprintf("credentials %s: not given to the agent: nono alone has no credential route of agent-sandbox's (the real key would sit in the agent's environment); %s", strings.Join(dropped, ", "), fix))
	}
	return &np, nil
}

// withoutRoutedKeys is s without the variables of its credentials
// (agent.toml [[credentials]]) where the built-in engine would route
// them (an allow list): nono alone has no route, and never gets the real
// value. dropped are those set on the host.
func withoutRoutedKeys(s spec.Spec, getenv func(string) string) (spec.Spec, []string) {
	if s.Network.Mode != posture.NetAllowlist || len(s.Credentials) == 0 {
		return s, nil
	}
	var dropped []string
	pass := slices.Clone(s.EnvPass)
	for _, c := range s.Credentials {
		pass = slices.DeleteFunc(pass, func(n string) bool { return n == c.Env })
		if getenv != nil && getenv(c.Env) != "" {
			dropped = append(dropped, c.Env)
		}
	}
	s.EnvPass = pass
	return s, dropped
}
