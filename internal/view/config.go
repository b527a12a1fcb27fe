package view

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

// InitArg is the hidden first argument that makes agent-sandbox act as the
// sandbox init; cmd/agent-sandbox hands such a run to [Init] before anything
// else.
const InitArg = "__sandbox-init"

// ExecPts is where the view shows the devpts instance of the terminals
// agent-sandbox exec gives its commands (exec -t): an instance of their
// own, outside /dev and every Landlock rule of the agent's, which the
// view's init grants (read and write) to the commands it starts after
// the agent only. The agent, the same uid, could otherwise open an exec'd
// command's pty slave in /dev/pts and read what the user types there.
// The view's Config mounts a Devpts here (the backend adds it).
const ExecPts = "/.agent-sandbox-pts"

// Kind says what a [Mount] puts at its path.
type Kind string

// The kinds of mount.
const (
	// ReadOnly binds the source read-only (recursively, with nosuid).
	ReadOnly Kind = "ro"
	// ReadWrite binds the source read-write (recursively, with nosuid).
	ReadWrite Kind = "rw"
	// Tmpfs mounts an empty, writable tmpfs (mode 1777). With a Source
	// (a name), the Tmpfs mounts of that Source share one tmpfs, sized
	// by the first: each is an empty directory of it (mode 1777), and
	// the size bounds what they hold together.
	Tmpfs Kind = "tmpfs"
	// Proc mounts a proc filesystem of the sandbox's PID namespace.
	Proc Kind = "proc"
	// Devpts mounts a new devpts instance (the sandbox's own ptys).
	Devpts Kind = "devpts"
	// Symlink creates a symbolic link to Target.
	Symlink Kind = "symlink"
	// Mask hides what a read-only bind shows at the path: an empty
	// read-only file over a file, an empty read-only directory over a
	// directory.
	Mask Kind = "mask"
	// Terminal binds the host's pty Source (or Path) at Path, a
	// /dev/pts/N below a Devpts mount: init allocates ptys in the
	// sandbox's instance until number N exists and binds the host's
	// node over it, so that the agent's terminal keeps its name.
	Terminal Kind = "terminal"
	// Dir creates an empty directory (a mount point for nothing, such as
	// $HOME when only parts of it are granted).
	Dir Kind = "dir"
	// Link binds the symlink at Path (a link the view shows through an
	// enclosing bind) onto itself, never following it: it can be neither
	// removed nor replaced. Target is what it must point at; another
	// target (or no link) stops the start.
	Link Kind = "link"
	// Overlay mounts an overlay at Path: Source (when it exists) as the
	// read-only lower layer, Upper and Work (directories of
	// agent-sandbox's state) as the writable layer. Writes land in Upper,
	// never in Source: a private, writable layer over a cache of the
	// host's. Where the kernel refuses the overlay, Upper alone is bound
	// read-write.
	Overlay Kind = "overlay"
	// Alias shows at Path what the view shows at Source (a path inside
	// the view, not the host's): a recursive clone of the mounts there,
	// each keeping its flags (a read-only bind below stays read-only),
	// placed after every other mount. A --worktree run's tree is shown
	// at the project's path this way. Landlock's rules hold inodes, so
	// the alias has Source's rules. A guarded mount below Source that
	// the watch puts back is put back at the alias's path too.
	Alias Kind = "alias"
)

// Mount is one entry of the view. Paths are absolute and canonical (no
// symlink, "." or ".." components): a source that turns out to contain a
// symlink when it is opened makes the start fail, because something changed
// it after it was checked.
type Mount struct {
	Kind Kind   `json:"kind"`
	Path string `json:"path"`
	// Source is the host path for binds; "" means Path.
	Source string `json:"source,omitempty"`
	// Target is the link target for Symlink.
	Target string `json:"target,omitempty"`
	// Upper and Work are an Overlay's writable layer and its work
	// directory (on one filesystem).
	Upper string `json:"upper,omitempty"`
	Work  string `json:"work,omitempty"`
	// Optional skips the mount when its source does not exist.
	Optional bool `json:"optional,omitempty"`
	// Size bounds a Tmpfs in bytes (0: the kernel's default, half of
	// the memory).
	Size int64 `json:"size,omitempty"`
	// Pin makes a bind a mount point of its own even where an enclosing
	// bind shows the same tree already (see coveredBinds): a directory
	// that must be neither removed nor renamed away (.git above its
	// read-only config and hooks).
	Pin bool `json:"pin,omitempty"`
	// Guarded lets the parent ask init to put the mount back
	// ([Process.Reprotect]) after the host replaced or removed what it
	// covered: a bind or mask sits on the path's old directory entry,
	// and the kernel detaches it when another namespace renames over,
	// or unlinks, that entry (git's config.lock renamed over config, an
	// editor's save). Only ReadOnly, ReadWrite with Pin, and Mask mounts
	// may be guarded.
	Guarded bool `json:"guarded,omitempty"`
}

// Network is the sandbox's network.
type Network string

// The network modes.
const (
	// NetHost shares the host's network namespace (open network).
	NetHost Network = "host"
	// NetLoopback is a private network namespace with only loopback up.
	NetLoopback Network = "loopback"
	// NetProxy is NetLoopback plus a listening socket on
	// 127.0.0.1:ProxyPort whose connections the parent serves (the
	// egress broker).
	NetProxy Network = "proxy"
)

// Rlimit is one resource limit set for the agent.
type Rlimit struct {
	Resource int    `json:"resource"`
	Name     string `json:"name"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// Config is everything the sandbox init needs to build the view and start
// the agent.
type Config struct {
	Mounts []Mount `json:"mounts"`
	// Workdir is the agent's working directory inside the view.
	Workdir string `json:"workdir"`
	// Argv is the agent's command line; Argv[0] is an absolute path
	// inside the view.
	Argv []string `json:"argv"`
	// Env is the agent's whole environment (KEY=VALUE).
	Env []string `json:"env"`
	// Landlock is the ruleset enforced on the agent, over paths inside
	// the view. Its Network must be NetOpen: the network namespace does
	// the network part.
	Landlock landlock.Policy `json:"landlock"`
	// WithoutLandlock lets init run the agent without Landlock when the
	// kernel has none (landlock.NewRulesetOrNone): the mounts are the
	// boundary, with seccomp and no_new_privs, as bubblewrap confines.
	// The parent sets it only where it planned and warned for that; a
	// kernel with Landlock enforces Landlock whatever it says.
	WithoutLandlock bool `json:"without_landlock,omitempty"`
	// Seccomp selects the optional parts of the seccomp filter.
	Seccomp landlock.Seccomp `json:"seccomp"`
	Network Network          `json:"network"`
	// ProxyPort is the port of the proxy socket with NetProxy.
	ProxyPort int `json:"proxy_port,omitempty"`
	// ForwardPorts are ports of the sandbox's loopback (127.0.0.1 and
	// ::1) on which init listens and hands the listening sockets to the
	// parent, which forwards their connections (NetLoopback or NetProxy;
	// see [Process.Forwards]).
	ForwardPorts []int `json:"forward_ports,omitempty"`
	// Inbound makes init create TCP sockets in the sandbox's network
	// namespace when the parent asks ([Process.DialInside]), so the
	// parent can connect host programs to servers the agent runs
	// (NetLoopback or NetProxy).
	Inbound bool `json:"inbound,omitempty"`
	// Rlimits are applied to the agent (never raising a hard limit).
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// UserLimits are written to /proc/sys/user/ in the sandbox's own
	// user namespace before the agent starts: the kernel's per-user
	// counts (inotify instances and watches) that a process there
	// charges to the caller's user on the host are bounded there too.
	UserLimits []UserLimit `json:"user_limits,omitempty"`
	// Umask, with SetUmask, is the agent's umask (the caller's);
	// without, the agent gets init's own. Init builds the view with
	// umask 0, whatever the caller's is (a umask that clears the owner's
	// execute bit would make the directories it creates untraversable).
	Umask    int  `json:"umask"`
	SetUmask bool `json:"set_umask"`
	// TerminalSignals says that the agent shares agent-sandbox's
	// terminal: the terminal itself delivers keyboard signals and window
	// changes to the agent, so init does not forward those.
	TerminalSignals bool `json:"terminal_signals,omitempty"`
	// SignalChildren says that the started process is a supervisor that
	// keeps some signals for itself (nono uses SIGUSR1 to pause, and has
	// no handler for SIGUSR2): init sends a signal it forwards to the
	// supervisor's children, the agent, instead.
	SignalChildren bool `json:"signal_children,omitempty"`
	// NoAgent starts no agent (agent-sandbox start): the session holds
	// only the processes exec starts, and lasts until the parent asks it
	// to end (Process.End) or init is signalled to end.
	NoAgent bool `json:"no_agent,omitempty"`
}

// UserLimit is one per-user-namespace limit of /proc/sys/user/ (see
// [Config.UserLimits]).
type UserLimit struct {
	// Name is the file's name: one of userLimitNames.
	Name string `json:"name"`
	// Value is what is written to it (at least 1).
	Value int64 `json:"value"`
}

// userLimitNames are the /proc/sys/user/ files a Config may set.
var userLimitNames = map[string]bool{"max_inotify_instances": true, "max_inotify_watches": true}

// check validates one mount of a Config.
func (m Mount) check() error {
	if !clean(m.Path) || m.Path == "/" {
		return fmt.Errorf("view: mount path %q is not an absolute clean path below /", m.Path)
	}
	switch m.Kind {
	case ReadOnly, ReadWrite, Terminal:
		if m.Source != "" && !clean(m.Source) {
			return fmt.Errorf("view: mount source %q is not an absolute clean path", m.Source)
		}
	case Alias:
		if err := m.checkAlias(); err != nil {
			return err
		}
	case Symlink, Link:
		if m.Target == "" {
			return fmt.Errorf("view: %s %s has no target", m.Kind, m.Path)
		}
	case Overlay:
		if !clean(m.Upper) || !clean(m.Work) || (m.Source != "" && !clean(m.Source)) {
			return fmt.Errorf("view: overlay %s needs absolute clean upper and work directories", m.Path)
		}
	case Tmpfs:
		if strings.Trim(m.Source, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("view: tmpfs %s: shared instance name %q: want lower-case letters, digits and '-'", m.Path, m.Source)
		}
	case Proc, Devpts, Mask, Dir:
	default:
		return fmt.Errorf("view: mount %s has unknown kind %q", m.Path, m.Kind)
	}
	if m.Guarded && m.Kind != ReadOnly && m.Kind != Mask && (m.Kind != ReadWrite || !m.Pin) {
		return fmt.Errorf("view: mount %s of kind %q cannot be guarded", m.Path, m.Kind)
	}
	return nil
}

// checkAlias validates an Alias: a source inside the view, other than the
// root, neither inside nor around its path.
func (m Mount) checkAlias() error {
	if !clean(m.Source) || m.Source == "/" {
		return fmt.Errorf("view: alias %s needs an absolute clean source inside the view", m.Path)
	}
	if inside(m.Path, m.Source) || inside(m.Source, m.Path) {
		return fmt.Errorf("view: alias %s and its source %s lie inside one another", m.Path, m.Source)
	}
	return nil
}

// Validate checks that c is complete and its paths are absolute and clean.
func (c Config) Validate() error {
	if len(c.Argv) == 0 || !filepath.IsAbs(c.Argv[0]) {
		return fmt.Errorf("view: the command must be an absolute path, not %q", strings.Join(c.Argv, " "))
	}
	for _, l := range c.UserLimits {
		if !userLimitNames[l.Name] || l.Value < 1 {
			return fmt.Errorf("view: user namespace limit %s = %d: want one of max_inotify_instances, max_inotify_watches and a value of at least 1", l.Name, l.Value)
		}
	}
	if !clean(c.Workdir) {
		return fmt.Errorf("view: working directory %q is not an absolute clean path", c.Workdir)
	}
	for _, m := range c.Mounts {
		if err := m.check(); err != nil {
			return err
		}
	}
	switch c.Network {
	case NetHost, NetLoopback:
	case NetProxy:
		if c.ProxyPort <= 0 || c.ProxyPort > 65535 {
			return fmt.Errorf("view: proxy port %d out of range", c.ProxyPort)
		}
	default:
		return fmt.Errorf("view: unknown network %q", c.Network)
	}
	seen := map[int]bool{c.ProxyPort: c.Network == NetProxy}
	for _, port := range c.ForwardPorts {
		if port <= 0 || port > 65535 {
			return fmt.Errorf("view: forwarded port %d out of range", port)
		}
		if seen[port] {
			return fmt.Errorf("view: port %d is forwarded twice (or is the proxy's)", port)
		}
		seen[port] = true
	}
	if (len(c.ForwardPorts) > 0 || c.Inbound) && c.Network == NetHost {
		return fmt.Errorf("view: forwarded ports need the sandbox's own network namespace, not the host's")
	}
	if c.Umask < 0 || c.Umask > 0o777 {
		return fmt.Errorf("view: umask %#o out of range", c.Umask)
	}
	if c.Landlock.Network != landlock.NetOpen {
		return fmt.Errorf("view: the Landlock policy's network must be open: the network namespace confines the network")
	}
	return nil
}

// inside reports whether the clean path p is base or lies below it.
func inside(p, base string) bool { return p == base || strings.HasPrefix(p, base+"/") }

func clean(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// source is the host path a bind reads from.
func (m Mount) source() string {
	if m.Source != "" {
		return m.Source
	}
	return m.Path
}

// ordered returns the mounts parents first: a mount at /a/b goes after the
// one at /a, so that it lands on top. Mounts at one path keep their order.
func ordered(ms []Mount) []Mount {
	out := append([]Mount{}, ms...)
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].Path) < depth(out[j].Path) })
	return out
}

func depth(p string) int { return strings.Count(p, "/") }

// coveredBinds reports, for mounts in placing order (ordered) whose
// sources were opened (opened[i]), the binds that would show nothing new:
// the mount that most closely encloses the bind's path is a bind of the
// same kind (read-only in read-only, read-write in read-write) of the same
// host path, whose recursive clone already shows this very tree there with
// the same flags (a system file such as /etc/hosts inside /etc). Placing
// them would only cost system calls. A bind from another host path, or
// under a mount of another kind, or pinned (Mount.Pin), is never covered.
func coveredBinds(ms []Mount, opened []bool) []bool {
	// The mount on top at each path: ordered places parents first, so
	// every mount at a path above a mount's lies before it.
	top := map[string]int{}
	for i, m := range ms {
		top[m.Path] = i
	}
	covered := make([]bool, len(ms))
	for i, m := range ms {
		if (m.Kind != ReadOnly && m.Kind != ReadWrite) || !opened[i] || m.source() != m.Path || m.Path == "/" || m.Pin {
			continue
		}
		near := -1
		for p := parentDir(m.Path); ; p = parentDir(p) {
			if j, ok := top[p]; ok {
				near = j
				break
			}
			if p == "/" {
				break
			}
		}
		if near < 0 {
			continue
		}
		n := ms[near]
		covered[i] = n.Kind == m.Kind && opened[near] && n.source() == n.Path
	}
	return covered
}

// parentDir is the parent of the absolute, clean path p ("/" for "/").
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// isDevPath says whether a view path lies in /dev, where binds are device
// nodes (/dev/null, /dev/tty...) that must stay usable.
func isDevPath(p string) bool { return p == "/dev" || strings.HasPrefix(p, "/dev/") }

// minSiblings is the fewest sibling binds worth a look at their parent
// (see siblingGroups): below it, reading the directory costs about what
// one bind of it saves.
const minSiblings = 8

// siblingGroup is a set of read-only binds (indices into the mounts) that
// are entries of one directory, dir.
type siblingGroup struct {
	dir     string
	members []int
}

// siblingGroups finds, among mounts in placing order (ordered) of which
// placed[i] says which binds will be placed (opened, not covered), the
// read-only binds that could be one bind of their common parent: each is
// an optional bind of its own host path (a grant: one that is not there
// is not in the view either way), neither pinned nor guarded, outside
// /dev; no mount lies at the parent; and every other mount below the
// parent is a mask (which hides only what exists) or lies in one of
// them. Only
// groups of at least minSiblings are returned. Whether the parent holds
// anything besides them can only be answered by the directory itself,
// which init reads (sharedParent): a group is a candidate, not a decision.
//
// Read-write binds are never grouped: their parent, bound read-write,
// would let the agent create, remove and rename entries there, which
// the skeleton between separate binds refuses.
func siblingGroups(ms []Mount, placed []bool) []siblingGroup {
	byDir := map[string][]int{}
	var dirs []string
	for i, m := range ms {
		if m.Kind != ReadOnly || !placed[i] || !m.Optional || m.source() != m.Path || m.Pin || m.Guarded || isDevPath(m.Path) {
			continue
		}
		d := parentDir(m.Path)
		if d == "/" {
			continue
		}
		if _, ok := byDir[d]; !ok {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], i)
	}
	var out []siblingGroup
	for _, d := range dirs {
		members := byDir[d]
		if len(members) < minSiblings {
			continue
		}
		in := make(map[string]bool, len(members))
		for _, i := range members {
			in[ms[i].Path] = true
		}
		ok := true
		for j, m := range ms {
			if m.Path == d {
				ok = false
				break
			}
			rest, below := strings.CutPrefix(m.Path, d+"/")
			if !below || m.Kind == Mask || in[m.Path] {
				continue
			}
			if (m.Kind == ReadOnly || m.Kind == ReadWrite || m.Kind == Terminal) && !placed[j] {
				continue // not placed: an optional bind whose source is missing, or a covered one
			}
			top, _, _ := strings.Cut(rest, "/")
			if !in[d+"/"+top] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, siblingGroup{dir: d, members: members})
		}
	}
	return out
}

// enclosingBinds says which binds (of ms, ordered) have another bind
// below their path: whether their source exists decides whether those
// are covered (coveredBinds).
func enclosingBinds(ms []Mount) []bool {
	out := make([]bool, len(ms))
	at := map[string]int{}
	for i, m := range ms {
		if m.Kind == ReadOnly || m.Kind == ReadWrite {
			at[m.Path] = i
		}
	}
	for _, m := range ms {
		if m.Kind != ReadOnly && m.Kind != ReadWrite {
			continue
		}
		for p := parentDir(m.Path); p != "/"; p = parentDir(p) {
			if i, ok := at[p]; ok {
				out[i] = true
			}
		}
	}
	return out
}

// inodeRules returns the paths at which the view shows the very inode a
// bind's source descriptor opened: paths where every mount is a bind
// (read-only or read-write) of one host path. The agent's Landlock rules
// of those paths go on the descriptors (landlock.Ruleset.AddOpened), so
// that a thousand granted paths are not looked up again. A path that
// also has a mask, a tmpfs or any other mount, or binds of two host
// paths, is left out: its rule looks the path up in the view.
func inodeRules(ms []Mount) map[string]bool {
	type at struct {
		source string
		ok     bool
	}
	paths := map[string]at{}
	for _, m := range ms {
		isBind := m.Kind == ReadOnly || m.Kind == ReadWrite
		a, seen := paths[m.Path]
		switch {
		case !seen:
			paths[m.Path] = at{m.source(), isBind}
		case !isBind || a.source != m.source():
			paths[m.Path] = at{ok: false}
		}
	}
	out := make(map[string]bool, len(paths))
	for p, a := range paths {
		if a.ok {
			out[p] = true
		}
	}
	return out
}
