package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runEngine is one way `agent-sandbox run -- CMD...` is started: a sandbox
// engine (the namespace view, the weaker sandbox on a simulated host without
// user namespaces, nono) or the unsandboxed control (--no-sandbox).
type runEngine struct {
	name string
	// argv is the whole command line that runs cmd under this engine.
	argv func(cmd ...string) []string
	// env is the environment: the run's HOME, PATH (with the nono under
	// test first for nono), TERM, and the engine's own variables.
	env []string
}

// engineNames are the engines every signal and terminal row runs under,
// the control first.
var engineNames = []string{"no-sandbox", "view", "weaker", "nono"}

// engineFor returns the engine name for the run r, or skips the (sub)test
// naming what this host lacks for it (a missing nono fails where cargo can
// build one, as everywhere in the suite).
func engineFor(t *testing.T, r *brokerRun, name string) runEngine {
	t.Helper()
	base := []string{"HOME=" + r.home, "LANG=C.UTF-8", "TERM=" + termOr("xterm")}
	plain := func(flags ...string) func(cmd ...string) []string {
		return func(cmd ...string) []string {
			return append(append(append([]string{r.bin, "-q"}, flags...), "run", "--"), cmd...)
		}
	}
	switch name {
	case "no-sandbox":
		return runEngine{name: name, argv: plain("--no-sandbox"), env: withCover(append(base, "PATH="+agentPath()))}
	case "view":
		skipWithoutLandlock(t)
		if ok, why := viewHere(); !ok {
			t.Skipf("the namespace view cannot run here: %s", why)
		}
		return runEngine{name: name, argv: plain("--sandbox-backend", "landlock"), env: withCover(append(base, "PATH="+agentPath()))}
	case "weaker":
		skipWithoutLandlock(t)
		prefix := noUserns(t)
		return runEngine{name: name, argv: func(cmd ...string) []string {
			return append(append([]string{}, prefix...), plain("--sandbox-backend", "landlock")(cmd...)...)
		}, env: withCover(append(base, "PATH="+agentPath(), "AGENT_SANDBOX_WEAKER_SANDBOX=1"))}
	case "nono":
		skipWithoutNono(t)
		flags := []string{"--sandbox-backend", "nono"}
		return runEngine{name: name, argv: plain(flags...), env: withCover(append(base, "PATH="+pathFor(flags)))}
	}
	t.Fatalf("unknown engine %q", name)
	return runEngine{}
}

// command is exec.Command for cmd under e, in the run's workdir.
func (e runEngine) command(r *brokerRun, cmd ...string) *exec.Cmd {
	argv := e.argv(cmd...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir, c.Env = r.work, e.env
	return c
}

// termOr is $TERM when set and not "dumb", else def.
func termOr(def string) string {
	if v := os.Getenv("TERM"); v != "" && v != "dumb" {
		return v
	}
	return def
}

// viewHere says whether this host lets the test's user build a namespace
// view (user namespaces on and not restricted), from the kernel's settings.
func viewHere() (bool, string) {
	read := func(name string) string {
		b, _ := os.ReadFile("/proc/sys/" + name)
		return strings.TrimSpace(string(b))
	}
	if read("user/max_user_namespaces") == "0" {
		return false, "user.max_user_namespaces is 0"
	}
	if os.Geteuid() != 0 && read("kernel/apparmor_restrict_unprivileged_userns") == "1" {
		return false, "AppArmor restricts unprivileged user namespaces"
	}
	return true, ""
}
