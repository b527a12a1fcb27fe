// Package landlock is the built-in landlock backend: it owns the rules of
// the built-in engine. It turns a run spec into the policy that confines the
// agent (PolicyFor: the read-only system paths, the terminal devices, the
// run's grants), refuses what the engine cannot enforce (Backend.Prepare),
// prepares the agent's environment and private TMPDIR, and runs the agent
// under that policy (Execute), with agent-sandbox itself as the trampoline
// that narrows /proc inside the sandbox (Trampoline).
//
// The kernel-facing step (building the ruleset, confining a thread, the
// network namespace, the ABI table) belongs to package internal/landlock,
// imported here as ll; this package decides what goes into the policy.
// PolicyFor is pure, so --dry-run prints exactly the policy a run enforces.
//
// Where the rest lives: the network decision (NetFor, pure, printed as
// landlock.net) and its host side (netSession: the broker, forwarded ports)
// in network.go; the credential routes and the run's CA in credentials.go;
// the refused-destination announcer in announce.go; the toolchains' caches
// (an overlay in the view, a copy in the weaker sandbox) in caches.go and
// caches_linux.go; the view's early start (Prestart, Early) and its Config
// (viewConfig) in view_linux.go; the run's systemd scope in scope.go; the
// session handlers and start's idle timeout in session.go; nono's start
// inside the view in inner.go.
package landlock

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// systemReadExec are the FHS directories of nono's system_read_linux_core
// group (nono 0.74 policy.json), readable and executable, plus /usr/libexec.
var systemReadExec = []string{
	"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin",
	"/lib", "/lib64", "/lib32", "/libx32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libexec",
	"/usr/local/lib", "/usr/local/lib64", "/usr/share",
}

// systemReadOnly are the /etc files of that group (DNS, TLS, locale, the
// loader cache, the distribution's release files), plus /etc/passwd and /etc/group so that tools can name the
// user, the system-wide shell start-up files (the user's own ~/.bashrc and
// ~/.profile stay denied: they are on nono's credential list), and /proc: the rules are made before the child exists, so its own
// /proc/self can only be granted through all of /proc; the trampoline (see
// Trampoline) then narrows /proc to the agent's own /proc/<pid> and a few
// host-wide files before the agent starts.
var systemReadOnly = []string{
	"/etc/resolv.conf", "/run/systemd/resolve", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/crypto-policies",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/timezone",
	"/etc/locale.conf", "/etc/locale.gen", "/etc/alternatives", "/etc/os-release", "/etc/services",
	// The distribution's name and version (pip's User-Agent reads
	// /etc/debian_version, and stops without it in the weaker sandbox),
	// and the MIME types Python's mimetypes reads (pip install too).
	"/etc/mime.types", "/etc/debian_version", "/etc/lsb-release", "/etc/redhat-release", "/etc/system-release", "/etc/alpine-release",
	"/etc/terminfo", "/lib/terminfo", "/etc/passwd", "/etc/group", "/etc/gitconfig",
	"/etc/bash.bashrc", "/etc/inputrc", "/etc/profile", "/etc/profile.d",
	"/proc",
}

// devices are the /dev nodes a terminal program needs, read-write. Not
// /dev/pts as a whole: the user's other terminals live there (a sandboxed
// agent could read the keystrokes typed into them); Execute adds only the
// agent's own terminal (TerminalNodes).
var devices = []string{
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	"/dev/tty", "/dev/ptmx",
}

// nixReadExec are nono's nix_runtime paths, granted when /nix/store exists.
func nixReadExec(home string) []string {
	return []string{
		"/nix/store", "/nix/var/nix/profiles", "/run/current-system/sw", "/etc/profiles/per-user",
		filepath.Join(home, ".nix-profile"), filepath.Join(home, ".local/state/nix/profile"),
		filepath.Join(home, ".local/state/nix/profiles"),
	}
}

// toolchainSecrets are files inside toolchain trees that hold credentials
// (registry tokens): masked in the view; a tree holding one is narrowed to
// its PATH directory under the weaker sandbox, which cannot mask.
func toolchainSecrets(home string) []string {
	var out []string
	for _, r := range []string{".cargo/credentials.toml", ".cargo/credentials", ".local/share/uv/credentials", ".conda/.anaconda", ".bun/install/credentials"} {
		out = append(out, filepath.Join(home, r))
	}
	return out
}

// narrowForWeaker replaces each toolchain tree that holds a credential
// path which exists by the PATH directory it was found from.
func narrowForWeaker(ts []spec.Toolchain, home string) []spec.Toolchain {
	secrets := append(grant.Home{Dir: home, GOOS: "linux"}.CredentialPaths(), toolchainSecrets(home)...)
	out := make([]spec.Toolchain, 0, len(ts))
	for _, t := range ts {
		for _, sec := range secrets {
			if _, err := os.Lstat(sec); err == nil && sec != t.Path && strings.HasPrefix(sec, t.Path+"/") {
				t = spec.Toolchain{Path: t.Dir, Dir: t.Dir, Why: t.Why + " (narrowed: the tree holds " + sec + ")"}
				break
			}
		}
		out = append(out, t)
	}
	return out
}

// SystemCovers reports whether p lies in one of the system directories the
// engine always grants read and execute.
func SystemCovers(p string) bool {
	for _, d := range systemReadExec {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// PolicyFor returns the policy for a spec. nixStore says whether /nix/store
// exists on this host; self is the agent-sandbox executable, which runs
// first in the sandbox as the trampoline.
func PolicyFor(s spec.Spec, nixStore bool, self string) ll.Policy {
	var p ll.Policy
	p.ReadExec = append(p.ReadExec, systemReadExec...)
	if self != "" {
		p.ReadExec = append(p.ReadExec, self)
	}
	if nixStore {
		p.ReadExec = append(p.ReadExec, nixReadExec(s.Home)...)
	}
	// The closure is plan's, checked path by path; nothing else is derived
	// here (a program's directory could be $HOME).
	p.ReadExec = append(p.ReadExec, s.ExecClosure...)
	for _, t := range s.Toolchains {
		p.ReadExec = append(p.ReadExec, t.Path)
	}

	p.ReadOnly = append(p.ReadOnly, systemReadOnly...)
	if s.AgentDir != "" {
		p.ReadOnly = append(p.ReadOnly, s.AgentDir)
	}
	p.ReadOnly = append(p.ReadOnly, s.Read...)
	p.ReadOnly = append(p.ReadOnly, s.UserConfig...)

	p.ReadWrite = append(p.ReadWrite, devices...)
	p.ReadWrite = append(p.ReadWrite, s.Allow...)
	// A read-write grant is executable, a file as well as a directory:
	// the kernel library gives a ReadWrite directory's files execute, but
	// a ReadWrite file none, so `--write tool.sh` could not run the tool
	// that `--write dir` could. Refusing it protected nothing (the agent
	// can write the file, so it can run its contents with `sh FILE` or
	// from a copy in the workdir). Read-only and write-only grants stay
	// not executable, files and directories alike.
	p.ReadExec = append(p.ReadExec, writtenFiles(s.Allow)...)
	p.WriteOnly = append(p.WriteOnly, s.Write...)
	// An allow list is a blocked network whose one door is the broker
	// (Execute adds its port, without a view, as the one TCP rule).
	if s.Network.Mode == posture.NetBlocked || s.Network.Mode == posture.NetAllowlist {
		p.Network = ll.NetBlocked
	}
	for _, l := range []*[]string{&p.ReadExec, &p.ReadOnly, &p.ReadWrite, &p.WriteOnly} {
		*l = uniq.Ordered(*l)
	}
	return p
}

// writtenFiles are the regular files among the read-write grants (after
// symlinks, which the plan has resolved); devices and sockets are not
// executed.
func writtenFiles(allow []string) []string {
	var out []string
	for _, g := range allow {
		if fi, err := os.Lstat(g); err == nil && fi.Mode().IsRegular() {
			out = append(out, g)
		}
	}
	return out
}

// Env returns the agent's environment: the host variables named in
// s.EnvPass that are set, then s.EnvSet, then TMPDIR and MISE_CACHE_DIR.
func Env(s spec.Spec, getenv func(string) (string, bool)) []string {
	var env []string
	for _, k := range s.EnvPass {
		if v, ok := getenv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(s.EnvSet))
	for k := range s.EnvSet {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.EnvSet[k])
	}
	env = append(env, "TMPDIR="+s.TempDir(), "MISE_CACHE_DIR="+s.MiseCacheDir())
	// Each toolchain cache where the view layers it (the tool's own
	// default, or the host's setting, which the agent does not inherit),
	// or the weaker sandbox's copy.
	goproxy, _ := getenv("GOPROXY")
	env = append(env, cacheEnv(s.Caches, goproxy)...)
	return env
}
