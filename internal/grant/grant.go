// Package grant decides whether a filesystem path may be handed to a sandbox.
//
// It owns the rules every backend shares: paths are expanded (~) and made
// canonical, and a grant is refused when it would expose the user's whole
// home, a credential store that nono always denies, nono's own protected state,
// or the places from which agent-sandbox reads policy (so an agent cannot widen
// its own next run). The checks are pure apart from resolving symlinks.
package grant

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Home describes the user's directories that the rules refer to.
type Home struct {
	Dir          string // $HOME, absolute
	XDGStateHome string // $XDG_STATE_HOME or ~/.local/state
	XDGConfig    string // $XDG_CONFIG_HOME or ~/.config
	GOOS         string // "linux", "darwin", ...
}

// HomeFromEnv builds a Home from an environment lookup function, applying the
// XDG defaults. It fails when HOME is unset or relative.
func HomeFromEnv(getenv func(string) string, goos string) (Home, error) {
	h := getenv("HOME")
	if h == "" || !filepath.IsAbs(h) {
		return Home{}, fmt.Errorf("HOME is %q: set HOME to your absolute home directory", h)
	}
	h = filepath.Clean(h)
	xdg := func(name, def string) string {
		if v := getenv(name); v != "" && filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		return filepath.Join(h, def)
	}
	return Home{
		Dir:          h,
		XDGStateHome: xdg("XDG_STATE_HOME", ".local/state"),
		XDGConfig:    xdg("XDG_CONFIG_HOME", ".config"),
		GOOS:         goos,
	}, nil
}

// StateRoot is agent-sandbox's own state directory, $XDG_STATE_HOME/agent-sandbox.
func (h Home) StateRoot() string { return filepath.Join(h.XDGStateHome, "agent-sandbox") }

// CheckpointRoot is the checkpoint stores' directory (internal/checkpoint),
// StateRoot/checkpoints: no grant, read-only or writable, reaches it.
func (h Home) CheckpointRoot() string { return filepath.Join(h.StateRoot(), "checkpoints") }

// SystemConfigDir is the system-wide agent-sandbox configuration
// (/etc/agent-sandbox, where the system's agent folders live).
const SystemConfigDir = "/etc/agent-sandbox"

// Protected lists the directories no writable grant may overlap (see
// Checker.Protected): agent-sandbox's own configuration and state, the
// system configuration, and lookupDirs (the agent lookup directories).
func (h Home) Protected(lookupDirs ...string) []string {
	return append([]string{h.ConfigRoot(), h.StateRoot(), SystemConfigDir}, lookupDirs...)
}

// SessionsDir holds the control channels of running sessions
// (internal/session): no grant, read-only ones included, may overlap it.
func (h Home) SessionsDir() string { return filepath.Join(h.StateRoot(), "sessions") }

// AgentStateDir is the per-agent state directory for agent id.
func (h Home) AgentStateDir(id string) string { return filepath.Join(h.StateRoot(), "agents", id) }

// ConfigRoot is agent-sandbox's user configuration directory.
func (h Home) ConfigRoot() string { return filepath.Join(h.XDGConfig, "agent-sandbox") }

// NonoStateRoots are the directories nono protects: a grant inside or above
// one makes nono refuse to start.
func (h Home) NonoStateRoots() []string {
	return []string{filepath.Join(h.Dir, ".nono"), filepath.Join(h.XDGStateHome, "nono")}
}

// Expand turns a grant as written in a folder file into an absolute, clean
// path: "~" and "~/x" expand to the home directory. Relative paths, "~user"
// forms and "$VAR" references are refused, because their meaning would depend
// on where the agent is started. (Globs are refused where a path is a
// grant: Checker.Resolve.)
func (h Home) Expand(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty path")
	case strings.Contains(p, "$"):
		return "", fmt.Errorf("%q: variables are not expanded; write an absolute path or one starting with ~/", p)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%q: path contains a NUL byte", p)
	case p == "~":
		return h.Dir, nil
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(h.Dir, p[2:]), nil
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("%q: ~user (another user's home) is not expanded, only ~ and ~/; write the absolute path", p)
	case !filepath.IsAbs(p):
		return "", fmt.Errorf("%q: relative paths are refused; write an absolute path or one starting with ~/", p)
	}
	return filepath.Clean(p), nil
}

// GlobChars are the characters that make a path a pattern for nono (which
// expands * and ** in grant paths and rejects ? and [...]) or for a shell.
const GlobChars = "*?["

// CheckNoGlob refuses a grant path that contains a glob character. nono
// expands globs in grant paths while the built-in engine and sbx take them
// literally, so one folder would mean two things under two backends; and a
// pattern such as ~/* would expand, after the checks, to paths no check saw
// (~/.ssh, agent-sandbox's own configuration). Grants are literal paths
// under every backend.
func CheckNoGlob(p string) error {
	if i := strings.IndexAny(p, GlobChars); i >= 0 {
		return fmt.Errorf("%q contains the glob character %q: grant paths are literal under every backend, and patterns are refused (nono would expand them, the built-in engine and sbx would not); list each path the agent needs", p, p[i:i+1])
	}
	return nil
}

// Canonical resolves symlinks in the longest existing prefix of an absolute
// path and appends the rest unchanged, so a path that does not exist yet is
// still judged by where it would land.
func Canonical(p string) string { return newResolver().canonical(p) }

// canonical is Canonical for a relative p: it walks up from p to the
// longest prefix that filepath.EvalSymlinks resolves.
func canonical(p string) string {
	p = filepath.Clean(p)
	rest := ""
	cur := p
	for i := 0; i < 255; i++ {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	return p
}

// CredentialPaths lists the paths nono always denies (its required deny
// groups for this platform, nono 0.74). A grant may neither contain one nor
// lie inside one.
func (h Home) CredentialPaths() []string {
	rel := append([]string{}, commonDeny...)
	abs := []string{}
	if h.GOOS == "darwin" {
		rel = append(rel, macDeny...)
		abs = append(abs, "/Library/Keychains")
	} else {
		rel = append(rel, linuxDeny...)
	}
	out := make([]string, 0, len(rel)+len(abs))
	for _, r := range rel {
		out = append(out, filepath.Join(h.Dir, r))
	}
	return append(out, abs...)
}

// From nono's required groups deny_credentials, deny_shell_history and
// deny_shell_configs (policy.json, nono 0.74).
var commonDeny = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".gcloud", ".kube", ".docker",
	".git-credentials", ".netrc", ".npmrc", ".bunfig.toml", ".config/bun/bunfig.toml",
	".vault-token", ".credentials", ".secrets", ".keys", ".pki", ".terraform.d", ".config/op",
	".bash_history", ".zsh_history", ".history", ".python_history",
	".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".bashrc", ".bash_profile",
	".bash_login", ".bash_logout", ".profile", ".config/fish", ".env", ".envrc",
	".password-store", ".1password",
}

// deny_keychains_linux and deny_browser_data_linux.
var linuxDeny = []string{
	".op", ".local/share/keyrings",
	".config/google-chrome", ".config/chromium", ".mozilla/firefox", ".config/microsoft-edge",
	".config/BraveSoftware", ".config/vivaldi", ".config/opera",
}

// deny_keychains_macos, deny_browser_data_macos and deny_macos_private.
var macDeny = []string{
	"Library/Keychains", "Library/Group Containers/2BUA8C4S2C.com.1password",
	"Library/Application Support/1Password", "Library/Containers/com.1password.1password",
	"Library/Application Support/Google/Chrome", "Library/Application Support/Chromium",
	"Library/Application Support/Firefox", "Library/Application Support/Microsoft Edge",
	"Library/Application Support/Arc", "Library/Application Support/BraveSoftware",
	"Library/Application Support/Vivaldi", "Library/Application Support/com.operasoftware.Opera",
	"Library/Safari", "Library/Messages", "Library/Mail", "Library/Cookies",
	"Library/Containers/com.apple.Safari", "Library/Application Support/MobileSync",
}

// Within reports whether p is base or lies beneath it (both clean and absolute).
func Within(p, base string) bool {
	if p == base {
		return true
	}
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	// strings.HasPrefix(p, base+"/"), without building base+"/".
	return len(p) > len(base) && p[len(base)] == '/' && strings.HasPrefix(p, base)
}

// Overlaps reports whether one of a and b lies within the other.
func Overlaps(a, b string) bool { return Within(a, b) || Within(b, a) }

// Checker judges grants for one run.
type Checker struct {
	Home Home
	// Protected are directories no writable grant may overlap: agent-sandbox's
	// configuration and state roots, the agent folder, agent lookup dirs.
	Protected []string
	// memo, when set (Memoize), keeps Resolve's lookups.
	memo *resolver
}

// Memoize returns c with a memory of the lookups Resolve makes, so that
// the grants of one plan share their common prefixes (a thousand grants
// in one directory look the directory up once). It answers from what it
// saw: use it for one plan, not across changes to the filesystem.
func (c Checker) Memoize() Checker {
	c.memo = newResolver()
	return c
}

// canonicalOnce memoises Canonical for the protected dirs Check compares
// writable grants against.
var canonicalOnce sync.Map

func canonicalCached(p string) string {
	if v, ok := canonicalOnce.Load(p); ok {
		return v.(string)
	}
	c := Canonical(p)
	canonicalOnce.Store(p, c)
	return c
}

// fixedPaths are the canonical forms of the paths Check compares every
// grant against, for one Home: computed once per process (one run checks
// dozens to thousands of grants against the same few dozen paths), in one
// batch that resolves each shared prefix (the home, ~/.config) once.
type fixedPaths struct {
	home  string
	nono  []string
	creds []string
	// persist are PersistencePaths, canonical.
	persist []string
	// sessions is the state root's sessions directory (SessionsDir),
	// canonical.
	sessions string
	// store is the checkpoint stores' directory (CheckpointRoot),
	// canonical.
	store string
}

var fixedByHome sync.Map // Home → *fixedPaths

func (h Home) fixed() *fixedPaths {
	if v, ok := fixedByHome.Load(h); ok {
		return v.(*fixedPaths)
	}
	r := newResolver()
	f := &fixedPaths{home: r.canonical(h.Dir)}
	for _, root := range h.NonoStateRoots() {
		f.nono = append(f.nono, r.canonical(root))
	}
	for _, cred := range h.CredentialPaths() {
		f.creds = append(f.creds, r.canonical(cred))
	}
	for _, pp := range h.PersistencePaths() {
		f.persist = append(f.persist, r.canonical(pp))
	}
	f.sessions = r.canonical(h.SessionsDir())
	f.store = r.canonical(h.CheckpointRoot())
	v, _ := fixedByHome.LoadOrStore(h, f)
	return v.(*fixedPaths)
}

// Check judges the absolute, canonical path p. writable says whether the
// grant lets the agent write. The error says why the grant is refused.
func (c Checker) Check(p string, writable bool) error {
	f := c.Home.fixed()
	home := f.home
	switch {
	case p == "/":
		return errors.New("grants the whole filesystem; grant only the paths the agent needs")
	case Within(home, p):
		if p == home {
			return fmt.Errorf("grants your whole home directory %s; grant only the paths the agent needs", home)
		}
		return fmt.Errorf("is a parent of your home directory %s; grant only the paths the agent needs", home)
	}
	for _, root := range f.nono {
		if Within(p, root) {
			return fmt.Errorf("lies inside nono's protected state root %s", root)
		}
		if Within(root, p) {
			return fmt.Errorf("contains nono's protected state root %s; grant a narrower path", root)
		}
	}
	for _, cred := range f.creds {
		if Within(p, cred) {
			return fmt.Errorf("lies inside the credential path %s, which is never granted", cred)
		}
		if Within(cred, p) {
			return fmt.Errorf("contains the credential path %s, which is never granted; grant a narrower path", cred)
		}
	}
	if writable {
		for _, pp := range f.persist {
			if Within(p, pp) {
				return fmt.Errorf("lies inside %s, from where the host runs code later (at login, in a shell, an editor or git): it may be granted read-only, never writable", pp)
			}
			if Within(pp, p) {
				return fmt.Errorf("contains %s, from where the host runs code later (at login, in a shell, an editor or git): grant a narrower path, or this one read-only", pp)
			}
		}
		for _, prot := range c.Protected {
			prot = canonicalCached(prot)
			if Overlaps(p, prot) {
				return fmt.Errorf("would let the agent write %s, where agent-sandbox keeps policy or state; the agent must not widen its own next run", prot)
			}
		}
	}
	// The checkpoint store holds the files of every workdir checkpointed
	// (.env files included): no grant reaches it, read-only ones neither.
	if store := f.store; Within(p, store) {
		return fmt.Errorf("lies inside agent-sandbox's checkpoint store %s, which holds the files of every workdir checkpointed and is never granted", store)
	} else if Within(store, p) {
		return fmt.Errorf("contains agent-sandbox's checkpoint store %s, which holds the files of every workdir checkpointed and is never granted; grant a narrower path", store)
	}
	// The sessions' control sockets (internal/session): no grant, not
	// even a read-only one, may show them to the agent.
	if Overlaps(p, f.sessions) {
		return fmt.Errorf("would show the agent %s, where the control sockets of running sessions live (agent-sandbox exec, allow); grant a narrower path", f.sessions)
	}
	return nil
}

// Resolve expands p, makes it canonical and checks it. The error names the
// path as written.
func (c Checker) Resolve(p string, writable bool) (string, error) {
	if err := CheckNoGlob(p); err != nil {
		return "", err
	}
	abs, err := c.Home.Expand(p)
	if err != nil {
		return "", err
	}
	var canon string
	if c.memo != nil {
		canon = c.memo.canonical(abs)
	} else {
		canon = Canonical(abs)
	}
	if err := c.Check(canon, writable); err != nil {
		if canon != abs {
			return "", fmt.Errorf("%q (resolves to %s) %s", p, canon, err.Error())
		}
		return "", fmt.Errorf("%q %s", p, err.Error())
	}
	return canon, nil
}

// Lstat reports whether p exists (lstat succeeds) and whether it is a Unix
// socket. A memoized checker answers from its lookups (a canonical grant
// was looked up by Resolve already), so a plan looks each grant up once.
func (c Checker) Lstat(p string) (exists, socket bool) {
	if c.memo != nil {
		n := c.memo.lstat(p)
		return !n.missing, n.socket
	}
	fi, err := os.Lstat(p)
	return err == nil, err == nil && fi.Mode()&fs.ModeSocket != 0
}
