//go:build linux

package landlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/engine"
	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/guard"
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/placeholder"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// viewConfig turns the Landlock policy p into a namespace view holding
// exactly p's paths (plus /etc without its secrets), with the same ruleset
// enforced inside it.
//
// layers are the writable layers of the toolchains' caches by name (a
// directory holding upper/ and work/); nil means each cache's own in the
// agent's state (cacheLayer).
func viewConfig(p ll.Policy, s spec.Spec, argv, env []string, workdir string, layers map[string]string) view.Config {
	home := s.Home
	c := view.Config{Workdir: workdir, Argv: argv, Env: env, Network: view.NetHost, Rlimits: defaultRlimits(), UserLimits: inotifyLimits()}
	if p.Network == ll.NetBlocked {
		c.Network = view.NetLoopback
	}
	order, kind := viewGrants(p)
	system := systemPaths(home)
	for _, path := range order {
		c.Mounts = append(c.Mounts, grantMount(path, kind[path], system))
	}
	c.Mounts = append(c.Mounts, etcMasks()...)
	// Credential paths inside a granted tree (a toolchain's own secrets,
	// such as ~/.cargo/credentials.toml) are masked: the tree is granted,
	// they are not.
	bound := boundPaths(c.Mounts)
	c.Mounts = append(c.Mounts, credentialMasks(home, bound)...)
	// A granted file reached through a symlink in the home (a dotfiles
	// repository): the link is recreated where tools look for it, unless
	// a bind shows the host's link there already.
	for _, l := range s.Links {
		if !insideBound(l.Path, bound) {
			c.Mounts = append(c.Mounts, view.Mount{Kind: view.Symlink, Path: l.Path, Target: l.Target})
		}
	}
	scratch, scratchMounts := configScratch(p, s, bound)
	c.Mounts = append(c.Mounts, scratchMounts...)
	c.Mounts = append(c.Mounts, protectedMounts(s.Ledger)...)
	caches, cacheMounts := cacheOverlays(s, layers)
	c.Mounts = append(c.Mounts, cacheMounts...)
	// The private /tmp, /var/tmp and /dev/shm are directories of one
	// tmpfs: its size bounds what they hold together (three of their own
	// could take three times as much where no memory scope bounds the
	// run).
	size := TmpSize(s)
	c.Mounts = append(c.Mounts,
		view.Mount{Kind: view.Tmpfs, Path: "/tmp", Source: "tmp", Size: size},
		view.Mount{Kind: view.Tmpfs, Path: "/var/tmp", Source: "tmp", Size: size},
		// Where tools that lock a device or a resource put their lock
		// files (firejail's sandboxes have it too): private, small, a
		// tmpfs of its own.
		view.Mount{Kind: view.Tmpfs, Path: "/var/lock", Size: varLockSize},
		view.Mount{Kind: view.Tmpfs, Path: "/dev/shm", Source: "tmp", Size: size},
		view.Mount{Kind: view.Dir, Path: "/dev"},
		view.Mount{Kind: view.Devpts, Path: "/dev/pts"},
		// exec -t's terminals: an instance the agent's Landlock domain
		// does not reach (view.ExecPts).
		view.Mount{Kind: view.Devpts, Path: view.ExecPts},
		// What bubblewrap's --dev gives besides the nodes: the
		// sandbox's own ptmx, and the links to the process's own
		// descriptors (`echo x > /dev/stderr`, bash's `<(...)`).
		view.Mount{Kind: view.Symlink, Path: "/dev/ptmx", Target: "pts/ptmx"},
		view.Mount{Kind: view.Symlink, Path: "/dev/fd", Target: "/proc/self/fd"},
		view.Mount{Kind: view.Symlink, Path: "/dev/stdin", Target: "/proc/self/fd/0"},
		view.Mount{Kind: view.Symlink, Path: "/dev/stdout", Target: "/proc/self/fd/1"},
		view.Mount{Kind: view.Symlink, Path: "/dev/stderr", Target: "/proc/self/fd/2"},
		view.Mount{Kind: view.Proc, Path: "/proc"},
		view.Mount{Kind: view.Mask, Path: "/proc/sysrq-trigger"},
	)
	c.Landlock = viewLandlock(p, scratch, caches)
	worktreeView(&c, s)
	c.Seccomp = ll.Seccomp{DenyKeyrings: true, DenyUserns: !s.NestedUserns}
	return c
}

// worktreeView shows a --worktree run's tree (the workdir) at the
// project's path as well, with every mount below it (view.Alias: the
// protected entries stay read-only there too), starts the agent there,
// and binds the project's objects read-only where the tree's alternates
// name them (the project's own .git/objects is under the tree's alias).
// Landlock's rules hold inodes: the alias is the tree's, with its rules.
func worktreeView(c *view.Config, s spec.Spec) {
	w := s.Worktree
	if w == nil {
		return
	}
	c.Mounts = append(c.Mounts,
		view.Mount{Kind: view.ReadOnly, Path: w.ObjectsLink, Source: w.Objects},
		view.Mount{Kind: view.Alias, Path: w.At, Source: s.Workdir},
	)
	c.Landlock.ReadOnly = append(slices.Clone(c.Landlock.ReadOnly), w.ObjectsLink)
	if c.Workdir == s.Workdir {
		c.Workdir = w.At
	}
}

// viewGrants decides which granted paths the view binds and how: the
// paths in the order they are first granted, and each one's kind (read-
// write wins over read-only). /proc, the root, and the host's ptys are
// left out.
func viewGrants(p ll.Policy) ([]string, map[string]view.Kind) {
	kind := map[string]view.Kind{}
	var order []string
	add := func(path string, k view.Kind) {
		if path == "/proc" || strings.HasPrefix(path, "/proc/") || path == "/" {
			return
		}
		// The sandbox has its own ptys (a devpts instance): the host's
		// /dev/pts nodes and /dev/ptmx stay out of the view.
		if path == "/dev/ptmx" || path == "/dev/pts" {
			return
		}
		if old, ok := kind[path]; ok {
			if old == view.ReadOnly && k == view.ReadWrite {
				kind[path] = k
			}
			return
		}
		kind[path] = k
		order = append(order, path)
	}
	for _, path := range append(append([]string{}, p.ReadExec...), p.ReadOnly...) {
		add(path, view.ReadOnly)
	}
	for _, path := range viewMounted {
		add(path, view.ReadOnly)
	}
	for _, path := range append(append([]string{}, p.ReadWrite...), p.WriteOnly...) {
		add(path, view.ReadWrite)
	}
	return order, kind
}

// grantMount is the view's mount for one granted path of kind k: the
// agent's terminal, a bind, or (for a system path) a root symlink or a
// bind placed where its symlinks lead.
func grantMount(path string, k view.Kind, system map[string]bool) view.Mount {
	m := view.Mount{Kind: k, Path: filepath.Clean(path), Optional: true}
	if strings.HasPrefix(path, "/dev/pts/") {
		// The agent's own terminal, over its number in the
		// sandbox's devpts instance (so that ttyname finds it).
		m.Kind = view.Terminal
		return m
	}
	if !system[path] {
		// A grant is never resolved again: the plan checked its
		// canonical path, and the agent (of this run or another)
		// could have swapped a component for a symlink since. The
		// view refuses to follow one.
	} else if target, err := readlinkAtRoot(path); err == nil {
		m = view.Mount{Kind: view.Symlink, Path: path, Target: target}
	} else if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		// The view mirrors the host's layout: a system path reached
		// through a symlink is placed where the link leads, and the
		// link itself is in the view (as a root entry or inside a
		// bind).
		m.Path = real
	}
	return m
}

// etcMasks are the masks over /etc's secrets, and, for a root caller,
// over what an ordinary user could not read in /etc.
func etcMasks() []view.Mount {
	var out []view.Mount
	for _, path := range etcSecrets {
		out = append(out, view.Mount{Kind: view.Mask, Path: path, Guarded: true})
	}
	if os.Geteuid() == 0 {
		// A root caller's agent is uid 0 inside (without capabilities):
		// what an ordinary user could not read in /etc is hidden too.
		for _, path := range etcRootOnlyList() {
			out = append(out, view.Mount{Kind: view.Mask, Path: path, Guarded: true})
		}
	}
	return out
}

// boundPaths are the paths of the read-only and read-write binds among
// mounts, in order.
func boundPaths(mounts []view.Mount) []string {
	var bound []string
	for _, m := range mounts {
		if m.Kind == view.ReadOnly || m.Kind == view.ReadWrite {
			bound = append(bound, m.Path)
		}
	}
	return bound
}

// credentialMasks are the masks over the home's credential paths and the
// toolchains' secrets that lie strictly inside a bound path.
func credentialMasks(home string, bound []string) []view.Mount {
	var out []view.Mount
	for _, cred := range append(grant.Home{Dir: home, GOOS: "linux"}.CredentialPaths(), toolchainSecrets(home)...) {
		for _, b := range bound {
			if cred != b && grant.Within(cred, b) {
				out = append(out, view.Mount{Kind: view.Mask, Path: cred, Guarded: true})
				break
			}
		}
	}
	return out
}

// configScratch decides which config files' directories become private
// tmpfs scratch directories: the directories, and their mounts.
//
// An agent's config file (~/.claude.json) is replaced the way editors
// and agents save: a new file beside it, then rename. Its directory
// (the home) is not granted; in the view it becomes a private,
// writable tmpfs that holds the new file (rename onto the bound file
// fails with EBUSY, and the agent copies instead, writing through the
// bind), and that vanishes with the run. Not when a write-only grant
// lies below it: the Landlock rule on the directory would make it
// readable.
func configScratch(p ll.Policy, s spec.Spec, bound []string) ([]string, []view.Mount) {
	var scratch []string
	var out []view.Mount
	for _, cp := range s.ConfigPaths {
		dir := filepath.Dir(cp)
		if !spec.ConfigIsFile(cp) || contains(scratch, dir) || insideBound(dir, bound) {
			continue
		}
		if anyWithin(p.WriteOnly, dir) {
			continue
		}
		scratch = append(scratch, dir)
		out = append(out, view.Mount{Kind: view.Tmpfs, Path: dir})
	}
	return scratch, out
}

// cacheOverlays are the toolchains' caches: a private, writable layer
// over the host's. It returns the caches' paths and their mounts.
func cacheOverlays(s spec.Spec, layers map[string]string) ([]string, []view.Mount) {
	var caches []string
	var out []view.Mount
	for _, cache := range s.Caches {
		layer := layers[cache.Name]
		if layer == "" {
			layer = cacheLayer(s, cache.Name)
		}
		out = append(out, view.Mount{Kind: view.Overlay, Path: cache.Path, Source: cache.Path,
			Upper: filepath.Join(layer, "upper"), Work: filepath.Join(layer, "work")})
		caches = append(caches, cache.Path)
	}
	return caches, out
}

// viewLandlock is the Landlock policy applied inside the view: p with the
// network left to the view, the view's own mounts granted, and every
// directory listable unless a write-only grant forbids it.
func viewLandlock(p ll.Policy, scratch, caches []string) ll.Policy {
	lp := p
	lp.Network = ll.NetOpen
	lp.AllowTCPConnect = nil
	lp.ReadOnly = append(append(append([]string{}, p.ReadOnly...), viewMounted...), "/dev")
	lp.ReadWrite = append(append(append(append([]string{}, p.ReadWrite...), "/tmp", "/var/tmp", "/var/lock", "/dev/shm", "/dev/pts"), scratch...), caches...)
	if len(p.WriteOnly) == 0 {
		// Every directory of the view can be listed: what is not
		// granted is not there (`ls /`, `find /usr`). Landlock cannot
		// grant listing a directory without what lies below it, so
		// with a write-only grant (which must not be listable) the
		// skeleton stays unlisted.
		lp.List = []string{"/"}
	}
	return lp
}

// varLockSize bounds the view's private /var/lock: lock files are empty
// or hold a pid.
const varLockSize = 16 << 20

// readlinkAtRoot is os.Readlink of path when path is an entry of the root
// directory (/lib, /bin on a merged-/usr system); an error for any other.
func readlinkAtRoot(path string) (string, error) {
	if filepath.Dir(path) != "/" {
		return "", os.ErrInvalid
	}
	return os.Readlink(path)
}

// protectedMounts keep the ledger's read-only entries read-only inside
// the writable grants: a read-only bind over each, and every directory
// between the grant and it bound onto itself, read-write, so that each is
// a mount point the agent can neither remove nor rename away (a .git
// renamed aside and rebuilt would carry new hooks). All are guarded: the
// watch has init put one back when the host replaces what it sat on. The
// binds are not optional: the run creates a missing entry first
// (internal/placeholder), and one gone by the time init opens it stops
// the run.
func protectedMounts(l protect.Ledger) []view.Mount {
	var out []view.Mount
	for _, pin := range l.Pins() {
		out = append(out, view.Mount{Kind: view.ReadWrite, Path: pin, Pin: true, Guarded: true})
	}
	for _, e := range l.ReadOnly() {
		if e.Link != "" {
			// A symlink the user made on the way to an entry: the
			// link itself, bound onto itself (not guarded: a link the
			// host replaces is the guard's to put back at the end).
			out = append(out, view.Mount{Kind: view.Link, Path: e.Path, Target: e.Link})
			continue
		}
		out = append(out, view.Mount{Kind: view.ReadOnly, Path: e.Path, Guarded: true})
	}
	return out
}

// insideBound reports whether p lies in (or is) one of the bound paths.
func insideBound(p string, bound []string) bool {
	for _, b := range bound {
		if grant.Within(p, b) {
			return true
		}
	}
	return false
}

// anyWithin reports whether one of paths lies in (or is) dir.
func anyWithin(paths []string, dir string) bool {
	for _, p := range paths {
		if grant.Within(p, dir) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// systemPaths are the paths of the policy that come from the engine's own
// lists (owned by the system, not by the agent): the only ones the view
// resolves through symlinks.
func systemPaths(home string) map[string]bool {
	m := map[string]bool{}
	for _, l := range [][]string{systemReadExec, systemReadOnly, devices, nixReadExec(home), viewMounted} {
		for _, p := range l {
			m[p] = true
		}
	}
	return m
}

// viewMounted are read-only in the view only: there the secret files below
// them (etcSecrets) are masked, which Landlock alone cannot do. (In the
// view, /dev holds only the nodes the policy names and the sandbox's own
// ptys, so Landlock lets the agent list and read it.)
var viewMounted = []string{"/etc"}

// etcSecrets are the files of /etc that hold secrets or say how the host
// authenticates: masked in the view (an empty file or directory). nono's
// system deny list is the floor.
var etcSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/doas.conf",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key",
	"/etc/ssl/private", "/etc/pki/tls/private", "/etc/security/opasswd",
	"/etc/krb5.keytab", "/etc/libvirt/secrets", "/etc/NetworkManager/system-connections",
	"/etc/wireguard", "/etc/ipsec.secrets", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
	"/etc/docker/key.json", "/etc/machine-id.secret", "/etc/cups/ssl",
}

// inotifyShare is the part of the user's inotify limits (instances and
// watches, fs.inotify.max_user_*) an agent in the view may take: the
// counts are the host user's, shared with the user's editors, the guard
// of every run and other runs.
const inotifyShare = 4

// inotifyLimits bounds the agent's inotify instances and watches in the
// view's own user namespace to a quarter of what the user may have (the
// lower of the host's limit and the caller's own namespace's); none when
// the kernel has no inotify.
func inotifyLimits() []view.UserLimit {
	var out []view.UserLimit
	for _, l := range [...]struct{ host, own string }{
		{"fs/inotify/max_user_instances", "max_inotify_instances"},
		{"fs/inotify/max_user_watches", "max_inotify_watches"},
	} {
		n := readSysctl(l.host)
		if own := readSysctl("user/" + l.own); own > 0 && (n <= 0 || own < n) {
			n = own
		}
		if n > 0 {
			out = append(out, view.UserLimit{Name: l.own, Value: max(1, n/inotifyShare)})
		}
	}
	return out
}

// readSysctl reads a number under /proc/sys, or -1.
func readSysctl(name string) int64 {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func defaultRlimits() []view.Rlimit {
	return []view.Rlimit{
		{Resource: unix.RLIMIT_NPROC, Name: "process count", Soft: defaultMaxProcesses, Hard: defaultMaxProcesses},
		{Resource: unix.RLIMIT_NOFILE, Name: "open files", Soft: defaultMaxOpenFiles, Hard: defaultMaxOpenFiles},
	}
}

// prepare creates the placeholders of the ledger's missing read-only
// entries and the writable layers of the toolchains' caches
// (launch.Lifecycle.Prepare).
func (v *viewRun) prepare() (func() []string, error) {
	layers, releaseLayers, err := cacheLayers(v.s)
	if err != nil {
		return nil, err
	}
	v.layers = layers
	set, err := placeholder.Make(v.s.Ledger, v.s.StateRoot(), v.s.Workdir)
	if err != nil {
		releaseLayers()
		return nil, err
	}
	v.set = set
	return func() []string {
		releaseLayers()
		return set.Release(v.stderr)
	}, nil
}

// reprotect binds the read-only entry or pinned directory at path again
// in the running view (guard.Reprotect), creating a placeholder first
// when an entry is gone.
func (v *viewRun) reprotect(proc *view.Process) guard.Reprotect {
	return func(path string) error {
		if _, err := os.Lstat(path); err != nil {
			if v.masks[path] {
				return nil // nothing left to hide
			}
			if err := v.set.Ensure(path); err != nil {
				return err
			}
		}
		return proc.Reprotect(path)
	}
}

// start starts the agent in the view (launch.Lifecycle.Start).
func (v *viewRun) start(cmd *exec.Cmd) (launch.Started, error) {
	argv := v.sess.args(append([]string{cmd.Path}, cmd.Args[1:]...), v.n.ProxyPort)
	env, pol := cmd.Env, v.p
	cleanup := func() {}
	if v.inner != nil {
		in, err := v.inner.Start(innerRun(v.s, argv, env, v.runTmp, v.runFiles))
		if err != nil {
			return launch.Started{}, &launch.SetupError{Err: fmt.Errorf("%s inside the namespace view: %v", v.inner.Name, err)}
		}
		cleanup = in.Cleanup
		argv, env = in.Argv, in.Env
		pol.ReadOnly = append(slices.Clone(pol.ReadOnly), in.ReadOnly...)
		pol.ReadWrite = append(slices.Clone(pol.ReadWrite), in.Writable...)
	}
	started, err := v.startView(cmd, argv, env, pol)
	if err != nil || started.Close == nil {
		cleanup()
		return started, err
	}
	close := started.Close
	started.Close = func() { close(); cleanup() }
	return started, nil
}

// startView starts argv with env in the view made of pol.
func (v *viewRun) startView(cmd *exec.Cmd, argv, env []string, pol ll.Policy) (launch.Started, error) {
	c := viewConfig(pol, v.s, argv, env, cmd.Dir, v.layers)
	// A kernel without Landlock: the view alone, as Prepare planned and
	// warned (NoLandlockWarning). Init enforces Landlock wherever the
	// kernel has it, whatever this says.
	if abi, _ := ll.ABI(); abi < 1 {
		c.WithoutLandlock = true
	}
	viewNetwork(&c, v.n)
	// In a network namespace of its own, a connection that leads nowhere
	// is refused at once and silently: init records each destination.
	c.Seccomp.NotifyConnect = c.Network != view.NetHost && v.sess != nil
	c.TerminalSignals = launch.IsTerminal(cmd.Stdin)
	// nono inside the view keeps SIGUSR1 for itself: init signals its
	// child, the agent.
	c.SignalChildren = v.inner != nil
	c.NoAgent = v.s.Started != nil
	if u := launch.CallerUmask(); u >= 0 {
		c.Umask, c.SetUmask = u, true
	}
	path, args, env, dir := cmd.Path, cmd.Args, cmd.Env, cmd.Dir
	in, out, errw := cmd.Stdin, cmd.Stdout, cmd.Stderr
	proc, err := v.early.start(cmd, c, v.scope.check(v.stderr))
	if errors.Is(err, view.ErrUnavailable) && v.s.Started != nil {
		return launch.Started{}, &launch.SetupError{Err: fmt.Errorf("%s (%s)", backend.StartRefusal(engine.Weaker), err)}
	}
	if errors.Is(err, view.ErrUnavailable) {
		// No weaker sandbox under nono: where the view turns out not
		// to be possible, a nono-in-view run is refused.
		if !WeakerSandboxAllowed() || v.inner != nil {
			return launch.Started{}, &launch.SetupError{Err: errors.New(noViewRefusal(err.Error()))}
		}
		diag.Warnf(v.stderr, "%s", weakerWarning(err.Error()))
		if v.n.Mode == posture.NetAllowlist {
			diag.Warnf(v.stderr, "%s", weakerAllowlistWarning)
		}
		if ro := v.s.Ledger.ReadOnly(); len(ro) > 0 {
			diag.Warnf(v.stderr, "%s", weakerProtectedWarning(ro))
		}
		// cmd is unstarted; restore it all the same (view.Start,
		// without an early init, rewrites it).
		cmd.Path, cmd.Args, cmd.Env, cmd.Dir = path, args, env, dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errw
		cmd.ExtraFiles, cmd.SysProcAttr = nil, nil
		wait, err := v.fallback(cmd)
		return launch.Started{Wait: wait}, err
	}
	if err != nil {
		return launch.Started{}, &launch.SetupError{Err: err}
	}
	proc.Attempted = v.sess.recordDirect
	proc.Unrecorded = v.sess.unrecordedDirect
	v.exec = func(argv []string, stdio []*os.File) (session.Proc, error) { return proc.Exec(argv, stdio) }
	v.execs = proc.Execs
	v.end = proc.End
	v.execTTY = func(argv []string, rows, cols uint16) (session.Proc, *os.File, error) {
		x, master, err := proc.ExecTTY(argv, rows, cols)
		if err != nil {
			return nil, nil, err
		}
		return x, master, nil
	}
	v.forward = proc.Forward
	v.serveExec = proc.ServeExec
	serveView(proc, v.n, v.sess)
	for _, n := range proc.Notes() {
		diag.Notef(v.stderr, "%s", n)
	}
	var masks []string
	v.masks = map[string]bool{}
	for _, m := range c.Mounts {
		if m.Kind == view.Mask && m.Guarded {
			masks = append(masks, m.Path)
			v.masks[m.Path] = true
		}
	}
	// The lifecycle signals cmd.Process: that is init, which passes
	// signals on to the agent.
	return launch.Started{
		Wait: func() error {
			// The checks of what the agent left start as soon as
			// nothing of the sandbox runs; init's exit overlaps them.
			err := proc.Ended()
			var se *view.SetupError
			if errors.As(err, &se) {
				diag.Errorf(v.stderr, "%s", se.Msg)
			}
			return err
		},
		Reprotect: v.reprotect(proc),
		Masks:     masks,
		Keep:      proc.Keep,
		Ended:     true,
		// init reports the agent's stops (view.Process's jobControl).
		OwnJobControl: true,
		// Then init exits; its exit (its namespaces' teardown, the
		// watch it holds) is reaped in the background and not waited
		// for (Ended).
		Close: func() { go func() { _ = proc.Wait() }() },
	}, nil
}

// Early is the view's init started before the run is fully planned (see
// [view.Spawn]), in the background: the fork and exec of init, and its
// runtime's start, overlap with the planning, the run's directories, the
// placeholders of protected paths and the view's configuration. Init
// builds nothing until it is sent that configuration. A nil *Early is
// valid: it has nothing started.
type Early struct {
	mode    posture.NetMode
	done    chan struct{} // closed when Spawn has returned
	pending *view.Pending
	pid     int   // pending's, set with it (read after done)
	err     error // Spawn's: reported at start, as view.Start would
}

// Prestart starts the view's init for a run with the network mode mode,
// in the background, when this host is expected to allow a view
// (view.Expected, asked in the background too); otherwise nothing is
// started, and the run's start says why. The run's
// Execute takes it over when it runs in the view with that mode; the
// caller must call [Early.Abort] once the run is over (or will not
// happen), which ends it if nothing took it.
func Prestart(mode posture.NetMode, stdio launch.Stdio) *Early {
	return spawnView(mode, stdio, true)
}

// spawnView spawns the init for network mode with the agent's stdio; with
// expected, only when view.Expected says this host allows a view (else
// the run's start meets the refusal itself: view.Start).
func spawnView(mode posture.NetMode, stdio launch.Stdio, expected bool) *Early {
	e := &Early{mode: mode, done: make(chan struct{})}
	vm := viewNetworkMode(Net{Mode: mode})
	if os.Geteuid() == 0 {
		// A root caller's view masks what only root reads in /etc:
		// the walk runs beside the planning too.
		startEtcRootOnly()
	}
	launch.Background(func() {
		defer close(e.done)
		if expected {
			if ok, _ := view.Expected(); !ok {
				return
			}
		}
		// The thread that forks init is the one whose end sends init
		// its parent-death signal. The runtime keeps its threads for
		// the life of the process (only a goroutine that ends locked to
		// its thread takes the thread with it; this one never locks).
		cmd := &exec.Cmd{Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err}
		e.pending, e.err = view.Spawn(cmd, vm)
		if e.err == nil {
			e.pid = e.pending.Pid()
		}
	})
	return e
}

// startScope asks, in the background once init is up, for the run's
// systemd user scope with init in it (attachScope); nil when the run has
// no memory bound a user manager can apply (appliedMemoryMax: a
// memory_max set in agent.toml was refused already where none can).
// Early.start joins it before init is sent its configuration.
func startScope(s spec.Spec, e *Early) *runScope {
	if appliedMemoryMax(s) == 0 {
		return nil
	}
	r := &runScope{s: s, done: make(chan struct{})}
	if e == nil {
		close(r.done) // the fresh init is attached at start
		return r
	}
	launch.Background(func() {
		defer close(r.done)
		<-e.done
		if r.pid = e.pid; r.pid != 0 {
			r.err = attachScope(s, r.pid)
		}
	})
	return r
}

// take hands the init over to a run with the network n: e itself when it
// was started for n's mode, else nil (and e is ended).
func (e *Early) take(n Net) *Early {
	if e == nil {
		return nil
	}
	if e.mode != n.Mode {
		e.Abort()
		return nil
	}
	return e
}

// start sends c to the early init (or starts one) and makes cmd, launch's
// command, stand for it: signals sent to cmd.Process reach init. Before
// c is sent (init has started nothing yet), scoped is told init's pid
// (the run's systemd user scope: runScope.check); an error from it ends
// init and is start's.
func (e *Early) start(cmd *exec.Cmd, c view.Config, scoped func(pid int) error) (*view.Process, error) {
	var pending *view.Pending
	if e != nil {
		<-e.done
		if e.err != nil {
			return nil, e.err
		}
		pending, e.pending = e.pending, nil
	}
	if pending == nil {
		// No early init, taken already, or never spawned (the host's
		// settings said no view: Spawn says why): a fresh init.
		if err := c.Validate(); err != nil {
			return nil, err
		}
		var err error
		if pending, err = view.Spawn(cmd, c.Network); err != nil {
			return nil, err
		}
	}
	if err := scoped(pending.Pid()); err != nil {
		pending.Abort()
		return nil, err
	}
	proc, err := pending.Start(c)
	if err != nil {
		return nil, err
	}
	cmd.Process = proc.OS()
	return proc, nil
}

// Abort ends the init when no run took it; it does nothing after a run
// started it, or on a nil *Early.
func (e *Early) Abort() {
	if e == nil {
		return
	}
	<-e.done
	if e.pending != nil {
		e.pending.Abort()
		e.pending = nil
	}
}

// viewNetworkMode is the view's network for n.
func viewNetworkMode(n Net) view.Network {
	switch n.Mode {
	case posture.NetOpen:
		return view.NetHost
	case posture.NetAllowlist:
		return view.NetProxy
	}
	return view.NetLoopback
}

// viewNetwork sets the view's network from n: a private namespace unless
// the network is open, the broker's socket in it for an allow list, and
// the forwarded ports.
func viewNetwork(c *view.Config, n Net) {
	c.Network = viewNetworkMode(n)
	switch c.Network {
	case view.NetHost:
		return
	case view.NetProxy:
		c.ProxyPort = n.ProxyPort
	}
	c.ForwardPorts = n.ForwardPorts()
	c.Inbound = len(n.Listen) > 0
}

// serveView serves the sockets the view handed over: the broker, the
// forwarded ports, and the host listeners of listen_port, which connect
// into the sandbox.
func serveView(proc *view.Process, n Net, sess *netSession) {
	if sess == nil {
		return
	}
	if l := proc.Listener(); l != nil {
		sess.serveProxy(l)
	}
	why := map[int]Port{}
	for _, p := range n.Forward {
		why[p.Port] = p
	}
	for _, f := range proc.Forwards() {
		sess.serveForward(f.Listener, why[f.Port])
	}
	sess.serveInbound(func(ctx context.Context, port int) (net.Conn, error) {
		c, err := proc.DialInside(port, false)
		if err == nil {
			return c, nil
		}
		if c6, err6 := proc.DialInside(port, true); err6 == nil {
			return c6, nil
		}
		return nil, err
	})
}

// viewExpected is view.Expected.
func viewExpected() (bool, string) { return view.Expected() }
