package agent

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
	"github.com/agent-sandbox/agent-sandbox/internal/sandboxfile"
	"github.com/agent-sandbox/agent-sandbox/internal/suggest"
)

// Config is an agent folder's agent.toml.
type Config struct {
	// Command is the program to run: a name looked up on the host PATH, or
	// an absolute path. "$SHELL" means the user's login shell (falling back
	// to /bin/sh); only the built-in shell agent needs it.
	Command string `toml:"command"`
	// Args are default arguments, placed before the user's.
	Args []string `toml:"args"`
	// Description is one line for `agent-sandbox agents`.
	Description string `toml:"description"`
	// ConfigPaths are granted read-write: the agent's own state.
	ConfigPaths []string `toml:"config_paths"`
	// ReadPaths are granted read-only.
	ReadPaths []string `toml:"read_paths"`
	// Env names host variables passed into the sandbox beyond the base set.
	Env []string `toml:"env"`
	// SetEnv are variables set for the agent (after Env).
	SetEnv map[string]string `toml:"set_env"`
	// ExecPaths are absolute paths of programs the agent runs besides its
	// own command; kernel backends grant their closures read and execute.
	ExecPaths []string `toml:"exec_paths"`
	// CodePaths are files and directories (usually inside ConfigPaths)
	// that the agent's next start loads code from: extensions, hooks,
	// plugins, custom commands. The built-in engine keeps them read-only
	// (a missing one is created empty for the run), and every run has
	// them audited (internal/protect, internal/guard).
	CodePaths []string `toml:"code_paths"`
	// CodeKeys are files the agent rewrites (so they stay writable) whose
	// keys make its next start run commands: after the run a change to
	// those keys is undone and the agent's version kept aside.
	CodeKeys []CodeKeys `toml:"code_keys"`
	// AllowEdit names protected paths of the working directory the agent
	// may edit (internal/protect.Names: ".git/hooks", ".vscode", ...); by
	// default the built-in engine keeps them read-only.
	AllowEdit []string `toml:"allow_edit"`
	// LoopbackEnv names variables whose loopback URLs are rewritten to
	// host.docker.internal under sbx (for example OLLAMA_HOST).
	LoopbackEnv []string `toml:"loopback_env"`
	// Sbx describes the agent inside a Docker sandbox.
	Sbx SbxConfig `toml:"sbx"`
	// NestedUserns lets the agent create user namespaces of its own
	// (containers, bubblewrap inside), which the built-in engine refuses
	// by default: inside one a process holds every capability, which
	// opens kernel code behind many local privilege escalations. Every
	// run that allows them warns.
	NestedUserns bool `toml:"nested_userns"`
	// TmpSize bounds the built-in engine's private /tmp, /var/tmp and
	// /dev/shm together ("512M", "8G"; binary units K, M, G, T); "" is a
	// quarter of the machine's memory.
	TmpSize string `toml:"tmp_size"`
	// MemoryMax bounds the memory of the built-in engine's run as a whole
	// ("6G"; binary units K, M, G, T), through a systemd user scope:
	// "" is three quarters of the machine's memory where the user's
	// systemd manager can apply it, "none" no bound (and no scope). A
	// value set here that cannot be applied refuses the run.
	MemoryMax string `toml:"memory_max"`
	// Credentials are the agent's keys the built-in engine's broker
	// injects: the agent holds a per-run phantom, never the real value.
	Credentials []Credential `toml:"credentials"`
	// ExpectedRefusals name destinations the agent is known to try and
	// that its sandbox refuses (Claude Code's downloads.claude.ai), in
	// allow_domain's grammar: the built-in engine's broker still refuses
	// and logs them, but does not warn of them. They never widen egress.
	ExpectedRefusals []string `toml:"expected_refusals"`
	// Checkpoint is whether each run records the workdir first, so that
	// `agent-sandbox undo` can put it back: "on" (a failure warns),
	// "off", or "required" (a failure refuses the run); "" is on for an
	// agent. --checkpoint wins over it.
	Checkpoint string `toml:"checkpoint"`
}

// Credential is one [[credentials]] table of agent.toml: an API key the
// egress broker adds to the agent's requests (the built-in engine with an
// allow list), so that the agent never holds it.
type Credential struct {
	// Env is the variable the agent reads its key from: it gets a
	// phantom, valid for this run and this route only.
	Env string `toml:"env"`
	// BaseURLEnv is the variable that points the agent at its API
	// (ANTHROPIC_BASE_URL): set to the broker's route.
	BaseURLEnv string `toml:"base_url_env"`
	// Upstream is the API's base URL the route forwards to, whose host
	// must be on the allow list; a BaseURLEnv the caller set wins (a
	// custom endpoint).
	Upstream string `toml:"upstream"`
	// Header carries the key upstream: "authorization" (Bearer) or a
	// header holding the key alone (x-api-key, x-goog-api-key).
	Header string `toml:"header"`
	// Source is where the real value comes from: "env:NAME" (default
	// env:<Env>), "file:PATH" or "command:CMD" (run by /bin/sh, its
	// first line; a password manager's CLI).
	Source string `toml:"source"`
	// BaseURLArgs are arguments added right after the command, for an
	// agent that takes its API's base URL from a flag rather than a
	// variable (codex: -c openai_base_url="{base_url}"); "{base_url}" in
	// each is replaced by the route's URL.
	BaseURLArgs []string `toml:"base_url_args"`
	// Intercept serves a client that takes no base URL (gh): the broker
	// answers its CONNECT to Upstream's host with a certificate of a CA
	// made for the run, which the agent trusts (SSL_CERT_FILE and
	// friends), and injects the key into the requests inside. Upstream
	// must be https without a path.
	Intercept bool `toml:"intercept"`
	// Git points the agent's git at the route for Upstream (its https
	// remotes there are rewritten to the route, url.insteadOf) with a
	// credential helper that gives the phantom as the password; with
	// header = "basic" (GitHub: a token as the password).
	Git bool `toml:"git"`
}

// checkCheckpoint checks the checkpoint key's value.
func checkCheckpoint(v string) error {
	switch v {
	case "", "on", "off", "required":
		return nil
	}
	return fmt.Errorf("checkpoint = %q: want \"on\", \"off\" or \"required\"", v)
}

// TmpSizeBytes is TmpSize in bytes (0 when unset); Validate has checked it.
func (c *Config) TmpSizeBytes() int64 {
	n, _ := ParseSize(c.TmpSize)
	return n
}

// MemoryMaxNone is memory_max's value for no memory bound.
const MemoryMaxNone = "none"

// MemoryMaxBytes is MemoryMax in bytes: 0 when unset, -1 for "none";
// Validate has checked it.
func (c *Config) MemoryMaxBytes() int64 {
	if c.MemoryMax == MemoryMaxNone {
		return -1
	}
	n, _ := ParseSize(c.MemoryMax)
	return n
}

// ParseSize reads a size: a whole number of bytes with an optional binary
// unit K, M, G or T (KiB...), at least 1M; "" is 0.
func ParseSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	num, mult := s, int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	case "T":
		mult = 1 << 40
	}
	if mult > 1 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a size such as \"512M\" or \"8G\" (binary units K, M, G, T)", s)
	}
	if n*mult < 1<<20 {
		return 0, fmt.Errorf("%q: at least 1M", s)
	}
	return n * mult, nil
}

// CodeKeys is one [[code_keys]] table of agent.toml.
type CodeKeys struct {
	// File is the file (~/ or absolute; .json, .jsonc or .toml).
	File string `toml:"file"`
	// Keys are dotted key paths; "*" matches any key or array index.
	Keys []string `toml:"keys"`
	// Commands, when set, is the prefix that marks a value of those keys
	// as a command to run (pi's "!"): only such values count.
	Commands string `toml:"commands"`
}

// SbxConfig is the [sbx] table of agent.toml.
type SbxConfig struct {
	// Install is the in-guest install spec, e.g. "npm:@anthropic-ai/claude-code".
	Install string `toml:"install"`
	// VersionCommand prints the host version the guest install is pinned to.
	VersionCommand []string `toml:"version_command"`
	// Home is HOME inside the guest ("~" means the host's home path).
	Home string `toml:"home"`
}

var (
	envName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	installR = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^npm:(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$`)
	})
)

// ParseConfig parses agent.toml contents. path is used in messages. Unknown
// keys and values of the wrong type are errors.
func ParseConfig(path string, b []byte) (*Config, error) {
	var c Config
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d:%d: %s", path, pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return nil, typeError(path, err, string(b))
	}
	if err := checkTypes(md); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		known := make([]string, 0, len(tomlSchema))
		for k := range tomlSchema {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("%s: %s: unknown key%s; agent.toml accepts command, args, description, config_paths, read_paths, code_paths, env, set_env, exec_paths, allow_edit, loopback_env, tmp_size, memory_max, nested_userns, expected_refusals, checkpoint, [[code_keys]] file, keys, commands, [[credentials]] and [sbx] install, version_command, home", path, keys[0], suggest.Phrase(keys[0], known))
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkCheckpoint(c.Checkpoint); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// configRule is one row of agent.toml's validation: the key it checks and
// the check. validate runs the rows in order and returns the first error,
// so the order of the table is the order errors are reported in.
type configRule struct {
	key   string
	check func(*Config) error
}

// configRules is agent.toml's validation as a table of field rules.
var configRules = []configRule{
	{"command", (*Config).checkCommand},
	{"config_paths, read_paths, code_paths", (*Config).checkPathLists},
	{"code_keys", (*Config).checkCodeKeys},
	{"exec_paths", (*Config).checkExecPaths},
	{"env, loopback_env", (*Config).checkEnvNames},
	{"set_env", (*Config).checkSetEnv},
	{"expected_refusals", (*Config).checkExpectedRefusals},
	{"allow_edit", func(c *Config) error { return protect.CheckNames("allow_edit", c.AllowEdit) }},
	{"tmp_size, memory_max", (*Config).checkSizes},
	{"credentials", (*Config).checkCredentials},
	{"sbx", (*Config).checkSbx},
}

func (c *Config) validate() error {
	for _, r := range configRules {
		if err := r.check(c); err != nil {
			return err
		}
	}
	return nil
}

// checkCommand checks command: present, no control character, and either
// "$SHELL", a name looked up on PATH or an absolute path.
func (c *Config) checkCommand() error {
	switch {
	case c.Command == "":
		return errors.New("command: missing; name the program to run, e.g. command = \"claude\"")
	case strings.ContainsAny(c.Command, "\x00\n"):
		return fmt.Errorf("command: %q contains a control character", c.Command)
	case c.Command == "$SHELL":
		return nil
	case strings.HasPrefix(c.Command, "~"):
		return fmt.Errorf("command: %q: ~ is not expanded in command (it is looked up on PATH or taken as an absolute path); write the absolute path", c.Command)
	case strings.Contains(c.Command, "$"):
		return fmt.Errorf("command: %q: variables are not expanded in command (only \"$SHELL\" alone means your shell); write the absolute path", c.Command)
	case strings.Contains(c.Command, "/") && !filepath.IsAbs(c.Command):
		return fmt.Errorf("command: %q is a relative path; use a name looked up on PATH or an absolute path", c.Command)
	}
	return nil
}

// homeOrAbs reports whether p is ~, starts with ~/ or is absolute.
func homeOrAbs(p string) bool {
	return p == "~" || strings.HasPrefix(p, "~/") || filepath.IsAbs(p)
}

// checkPathLists checks config_paths, read_paths and code_paths: each
// entry ~/-relative or absolute, without glob characters.
func (c *Config) checkPathLists() error {
	for key, list := range map[string][]string{"config_paths": c.ConfigPaths, "read_paths": c.ReadPaths, "code_paths": c.CodePaths} {
		for i, p := range list {
			if !homeOrAbs(p) {
				return fmt.Errorf("%s[%d]: %s", key, i, notAbsolute(p))
			}
			if err := grant.CheckNoGlob(p); err != nil {
				return fmt.Errorf("%s[%d]: %v", key, i, err)
			}
		}
	}
	return nil
}

// checkCodeKeys checks every [[code_keys]] table.
func (c *Config) checkCodeKeys() error {
	for i, k := range c.CodeKeys {
		if err := k.check(fmt.Sprintf("code_keys[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// check checks one [[code_keys]] table; where names it in messages.
func (k CodeKeys) check(where string) error {
	switch {
	case k.File == "":
		return fmt.Errorf("%s.file: missing; name the settings file, e.g. file = \"~/.claude/settings.json\"", where)
	case !homeOrAbs(k.File):
		return fmt.Errorf("%s.file: %s", where, notAbsolute(k.File))
	}
	if err := grant.CheckNoGlob(k.File); err != nil {
		return fmt.Errorf("%s.file: %v", where, err)
	}
	switch filepath.Ext(k.File) {
	case ".json", ".jsonc", ".toml":
	default:
		return fmt.Errorf("%s.file: %q: only JSON (.json, .jsonc) and TOML (.toml) files can be read by key; name the file in code_paths to keep it read-only instead", where, k.File)
	}
	if len(k.Keys) == 0 {
		return fmt.Errorf("%s.keys: missing; name the keys that run code, e.g. keys = [\"hooks\"]", where)
	}
	for j, key := range k.Keys {
		for _, seg := range strings.Split(key, ".") {
			if seg == "" {
				return fmt.Errorf("%s.keys[%d]: %q: a dotted key path with no empty part (\"*\" matches any key)", where, j, key)
			}
		}
	}
	if strings.ContainsAny(k.Commands, "\x00\n") {
		return fmt.Errorf("%s.commands: %q contains a control character", where, k.Commands)
	}
	return nil
}

// checkExecPaths checks exec_paths: absolute, without glob characters.
func (c *Config) checkExecPaths() error {
	for i, p := range c.ExecPaths {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("exec_paths[%d]: %q must be an absolute path", i, p)
		}
		if err := grant.CheckNoGlob(p); err != nil {
			return fmt.Errorf("exec_paths[%d]: %v", i, err)
		}
	}
	return nil
}

// checkEnvNames checks env and loopback_env: each a variable name.
func (c *Config) checkEnvNames() error {
	for key, list := range map[string][]string{"env": c.Env, "loopback_env": c.LoopbackEnv} {
		for i, n := range list {
			if !envName().MatchString(n) {
				return fmt.Errorf("%s[%d]: %q is not a variable name", key, i, n)
			}
		}
	}
	return nil
}

// checkSetEnv checks set_env: variable names, values without NUL.
func (c *Config) checkSetEnv() error {
	for k, v := range c.SetEnv {
		if !envName().MatchString(k) {
			return fmt.Errorf("set_env.%s: not a variable name", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("set_env.%s: value contains a NUL byte", k)
		}
	}
	return nil
}

// checkExpectedRefusals checks expected_refusals: each a host name.
func (c *Config) checkExpectedRefusals() error {
	for i, h := range c.ExpectedRefusals {
		if err := sandboxfile.CheckHost(h); err != nil {
			return fmt.Errorf("expected_refusals[%d]: %v", i, err)
		}
	}
	return nil
}

// checkSizes checks tmp_size and memory_max (a size, or "none").
func (c *Config) checkSizes() error {
	if _, err := ParseSize(c.TmpSize); err != nil {
		return fmt.Errorf("tmp_size: %v", err)
	}
	if c.MemoryMax != MemoryMaxNone {
		if _, err := ParseSize(c.MemoryMax); err != nil {
			return fmt.Errorf("memory_max: %v, or \"none\"", err)
		}
	}
	return nil
}

// checkCredentials checks every [[credentials]] table and that no
// variable is named twice.
func (c *Config) checkCredentials() error {
	seen := map[string]bool{}
	for i, cr := range c.Credentials {
		where := fmt.Sprintf("credentials[%d]", i)
		if seen[cr.Env] && envName().MatchString(cr.Env) {
			return fmt.Errorf("%s.env: %q is named twice", where, cr.Env)
		}
		if err := cr.check(where); err != nil {
			return err
		}
		seen[cr.Env] = true
	}
	return nil
}

// check checks one [[credentials]] table; where names it in messages.
func (cr Credential) check(where string) error {
	switch {
	case !envName().MatchString(cr.Env):
		return fmt.Errorf("%s.env: %q is not a variable name", where, cr.Env)
	case !((cr.Git || cr.Intercept || len(cr.BaseURLArgs) > 0) && cr.BaseURLEnv == "") && !envName().MatchString(cr.BaseURLEnv):
		return fmt.Errorf("%s.base_url_env: %q is not a variable name (the variable that points the agent at its API, e.g. ANTHROPIC_BASE_URL)", where, cr.BaseURLEnv)
	case !strings.HasPrefix(cr.Upstream, "https://") && !strings.HasPrefix(cr.Upstream, "http://"):
		return fmt.Errorf("%s.upstream: %q: want the API's base URL, e.g. \"https://api.anthropic.com\"", where, cr.Upstream)
	case cr.Header == "" || strings.ContainsAny(cr.Header, " :\r\n"):
		return fmt.Errorf("%s.header: %q: want \"authorization\" (Bearer), \"basic\" (the key as a Basic password, for git) or the header that holds the key, e.g. \"x-api-key\"", where, cr.Header)
	}
	if u, err := url.Parse(cr.Upstream); cr.Intercept && (err != nil || u.Scheme != "https" || strings.Trim(u.Path, "/") != "") {
		return fmt.Errorf("%s.upstream: %q: with intercept = true, want an https origin without a path, e.g. \"https://api.github.com\"", where, cr.Upstream)
	}
	if len(cr.BaseURLArgs) > 0 && !strings.Contains(strings.Join(cr.BaseURLArgs, "\x00"), "{base_url}") {
		return fmt.Errorf("%s.base_url_args: %q: no argument holds {base_url}, which is replaced by the route's URL", where, cr.BaseURLArgs)
	}
	if s := cr.Source; s != "" && !strings.HasPrefix(s, "env:") && !strings.HasPrefix(s, "file:") && !strings.HasPrefix(s, "command:") {
		return fmt.Errorf("%s.source: %q: want env:NAME, file:PATH or command:CMD", where, s)
	}
	return nil
}

// checkSbx checks the [sbx] table: install is npm:<package>, home is
// absolute or ~/-relative.
func (c *Config) checkSbx() error {
	if c.Sbx.Install != "" && !installR().MatchString(c.Sbx.Install) {
		return fmt.Errorf("sbx.install: %q: want npm:<package>, e.g. npm:@anthropic-ai/claude-code", c.Sbx.Install)
	}
	if h := c.Sbx.Home; h != "" && !homeOrAbs(h) {
		return fmt.Errorf("sbx.home: %q must be absolute or start with ~/", h)
	}
	return nil
}

// notAbsolute says why a path that must be absolute (or start with ~/)
// is not: an unexpanded variable, another user's home, or relative.
func notAbsolute(p string) string {
	switch {
	case strings.Contains(p, "$"):
		return fmt.Sprintf("%q: variables are not expanded; write an absolute path or one starting with ~/", p)
	case strings.HasPrefix(p, "~"):
		return fmt.Sprintf("%q: ~user (another user's home) is not expanded, only ~ and ~/; write the absolute path", p)
	}
	return fmt.Sprintf("%q is relative; write an absolute path or one starting with ~/", p)
}

// ResolveCommand returns the program to look up for this config, expanding
// "$SHELL" from getenv.
func (c *Config) ResolveCommand(getenv func(string) string) string {
	if c.Command != "$SHELL" {
		return c.Command
	}
	if s := getenv("SHELL"); filepath.IsAbs(s) {
		if st, err := os.Stat(s); err == nil && !st.IsDir() {
			return s
		}
	}
	return "/bin/sh"
}
