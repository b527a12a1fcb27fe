package landlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// WeakerSandboxEnv is the environment variable by which a user accepts the
// weaker sandbox on a host that does not let agent-sandbox build a
// namespace view: Landlock, seccomp (no Unix sockets, no keyrings) and
// no_new_privs only. Its value must be 1.
const WeakerSandboxEnv = "AGENT_SANDBOX_WEAKER_SANDBOX"

// WeakerSandboxAllowed reports whether the user set WeakerSandboxEnv=1.
func WeakerSandboxAllowed() bool { return os.Getenv(WeakerSandboxEnv) == "1" }

// weakerLacks is what the weaker sandbox does not give that the view
// does (internal/engine's description), said in the refusal and in the
// warning printed on every run that uses it.
func weakerLacks() string {
	return "compared with the namespace view it does not give: " + engine.Must(engine.Weaker).Missing()
}

// noViewRefusal is the refusal when the view is unavailable and the user
// did not opt into the weaker sandbox.
func noViewRefusal(why string) string {
	return fmt.Sprintf("the built-in engine cannot build the agent's namespace view here (%s): refusing to run with Landlock alone. "+
		"Allow unprivileged user namespaces for agent-sandbox (`agent-sandbox doctor` shows how, including the AppArmor profile), "+
		"or accept the weaker sandbox with %s=1 (%s)", why, WeakerSandboxEnv, weakerLacks())
}

// weakerWarning is printed on every run under the weaker sandbox.
func weakerWarning(why string) string {
	return fmt.Sprintf("running in the WEAKER sandbox (%s=1): no namespace view here (%s); %s", WeakerSandboxEnv, why, weakerLacks())
}

// The default resource limits of the agent: process (thread) count and
// open files. They never raise a limit the caller already has lower.
const (
	defaultMaxProcesses = 8192
	defaultMaxOpenFiles = 16384
)

// weakerAllowlistWarning is printed on every allow-list run under the
// weaker sandbox: Landlock's TCP rules name a port, not an address.
const weakerAllowlistWarning = "allow-list network in the WEAKER sandbox: without a network namespace Landlock can only allow TCP connections by port, so the egress broker's port (and every open_port) is open on every remote host too, and UDP and DNS are not confined; allow unprivileged user namespaces for agent-sandbox (`agent-sandbox doctor` shows how) to get the namespace whose only door is the broker"

// weakerListenRefusal refuses listen_port where no view can be built.
const weakerListenRefusal = "network.listen_port needs the built-in engine's network namespace, which this host does not allow (no user namespaces): allow unprivileged user namespaces for agent-sandbox (`agent-sandbox doctor` shows how), use nono, or remove listen_port"

// weakerProtectedWarning says that the weaker sandbox leaves the protected
// paths ps writable.
func weakerProtectedWarning(ps []protect.Entry) string {
	return fmt.Sprintf("the weaker sandbox cannot keep paths inside a writable grant read-only (Landlock only adds rights): the agent can write %s, which your tools run later (git, editors, direnv, agents); agent-sandbox audits them while the agent runs and after it ends, restoring git's code-running settings and hooks and naming every other change", joinProtected(ps))
}

// shellStartup are the shell start-up files in a home that shells read
// by themselves; they are on the credential list (they often export
// keys), so no run grants them.
var shellStartup = []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshenv", ".zshrc", ".zprofile", ".zlogin"}

// weakerComments are the --dry-run lines on what the weaker sandbox
// refuses that the view hides: the view shows neither the user's shell
// start-up files nor the host's /tmp and /var/tmp; without mounts they
// stay where they are, refused, and programs say so.
func weakerComments(home string) []string {
	var rc []string
	for _, n := range shellStartup {
		if p := filepath.Join(home, n); home != "" && fileExists(p) {
			rc = append(rc, p)
		}
	}
	out := []string{"/tmp and /var/tmp are the host's, shared with your other programs: refused (the view has private ones; the run's TMPDIR is its own)",
		"listing / is refused (Landlock's right to list / would cover every directory below it); what is granted is reached by its path",
		"chmod, chown, touch and extended attributes, which Landlock does not govern, are performed by agent-sandbox for the agent, inside the writable grants only (elsewhere: EPERM)"}
	if len(rc) > 0 {
		out = append(out, fmt.Sprintf("your shell start-up files stay unreadable, as the view hides them (they often export secrets): %s; a shell the agent starts interactively or as a login shell prints \"Permission denied\" for each", strings.Join(rc, ", ")))
	}
	return out
}

// fileExists says whether p exists (a symlink counts, dangling or not).
func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
