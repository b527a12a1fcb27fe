package protect

import (
	"fmt"
	"sort"
	"strings"
)

// The names of git metadata, wherever the git directory lies.
const (
	// GitConfig covers config and config.worktree of every git dir, the
	// files they include, and a commondir file.
	GitConfig = ".git/config"
	// GitHooks covers hooks/ of every git dir, the directory
	// core.hooksPath names, and the scripts hooks link to.
	GitHooks = ".git/hooks"
	// GitFile is the workdir's .git when it is a file ("gitdir: ..."):
	// rewritten, it points the user's git at a directory the agent made.
	GitFile = ".git"
)

// project are the names below the working directory, and whether each is
// a directory.
var project = []struct {
	name string
	dir  bool
	why  string
	fmt  Format
	keys []string
}{
	{".vscode", true, "VS Code runs its tasks and settings", "", nil},
	{".idea", true, "JetBrains IDEs run its run configurations", "", nil},
	{".codex", true, "Codex loads its config for a trusted project", "", nil},
	{".claude/settings.json", false, "Claude Code runs its hooks and honours its permissions", FormatJSON, claudeSettingsKeys},
	{".claude/settings.local.json", false, "Claude Code runs its hooks and honours its permissions", FormatJSON, claudeSettingsKeys},
	{".claude/commands", true, "Claude Code's slash commands run shell commands", "", nil},
	{".claude/agents", true, "Claude Code's subagents", "", nil},
	{".mcp.json", false, "Claude Code starts its MCP servers", FormatJSON, []string{"mcpServers"}},
	{".gitmodules", false, "git clones and checks out what it names", "", nil},
	{".envrc", false, "direnv runs it on cd", "", nil},
}

// claudeSettingsKeys are the keys of a Claude Code settings file that run
// code or widen what the next run (sandboxed or not) may do.
var claudeSettingsKeys = []string{
	"hooks", "statusLine", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper",
	"fileSuggestion", "env", "permissions", "enableAllProjectMcpServers", "enabledMcpjsonServers",
	"enabledPlugins", "extraKnownMarketplaces", "sandbox",
}

// Names are the names allow_edit and --allow-edit accept, sorted.
func Names() []string {
	out := []string{GitFile, GitConfig, GitHooks}
	for _, p := range project {
		out = append(out, p.name)
	}
	sort.Strings(out)
	return out
}

// CheckNames refuses a name that is not one of Names. where names the
// source in the error ("agent.toml: allow_edit", "--allow-edit").
func CheckNames(where string, names []string) error {
	known := map[string]bool{}
	for _, n := range Names() {
		known[n] = true
	}
	for i, n := range names {
		c := strings.TrimSuffix(strings.TrimPrefix(n, "./"), "/")
		if !known[c] {
			return fmt.Errorf("%s[%d]: %q is not a protected path; name one of %s (relative to the working directory; %s and %s cover every git directory of the run)", where, i, n, strings.Join(Names(), ", "), GitConfig, GitHooks)
		}
	}
	return nil
}

// Normalize returns names cleaned as CheckNames accepts them.
func Normalize(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(n, "./"), "/"))
	}
	return out
}

// ProjectTops are the first components of the protected project names
// (.vscode, .claude, .envrc, ...): what a scan looks for in subdirectories.
func ProjectTops() map[string]bool {
	out := map[string]bool{}
	for _, p := range project {
		out[strings.SplitN(p.name, "/", 2)[0]] = true
	}
	return out
}

// reported are project names other tools run code from that the built-in
// engine does not keep read-only (an agent's legitimate work edits some of
// them, and a placeholder for a missing one would change what its tool
// does): other agents' project settings, extensions and plugins (pi,
// Gemini CLI, opencode, Cursor), editor files (Zed, Vim and Neovim), git
// hook managers (pre-commit, husky, lefthook), mise and dev containers.
// The end-of-run scan reports each one the run created or changed, at any
// depth of the workdir.
var reported = map[string]bool{
	".pi": true, ".gemini": true, ".opencode": true, "opencode.json": true, "opencode.jsonc": true,
	".cursor": true, ".zed": true, ".exrc": true, ".nvimrc": true, ".nvim.lua": true,
	".pre-commit-config.yaml": true, ".husky": true,
	"lefthook.yml": true, "lefthook.yaml": true, ".lefthook.yml": true, ".lefthook.yaml": true,
	"lefthook-local.yml": true, "lefthook-local.yaml": true,
	"mise.toml": true, ".mise.toml": true, "mise.local.toml": true, ".mise.local.toml": true, ".mise": true,
	".devcontainer": true, ".devcontainer.json": true,
}

// Reported says whether a file or directory of this base name is one that
// other tools run code from but that no run keeps read-only (the names
// above, and VS Code's *.code-workspace files): the end-of-run scan names
// it when the run created or changed it.
func Reported(name string) bool {
	return reported[name] || strings.HasSuffix(name, ".code-workspace")
}

// Why nono and sbx cannot keep the ledger's paths read-only.
const (
	NonoCannot = "on Linux Landlock cannot deny a path inside an allowed directory and nono refuses such overlaps; agent-sandbox's nono profile does not carve them out on macOS either"
	SbxCannot  = "sbx mounts whole directories, read-only or read-write"
)

// Unenforced is the warning of a backend that cannot keep the ledger's
// read-only entries read-only (why says why), or "" when it has none: it
// names what the agent can write, and what agent-sandbox still does (the
// audit after the run, and while it runs).
func Unenforced(backend, why string, l Ledger) string {
	var names []string
	seen := map[string]bool{}
	for _, e := range l.Entries {
		if e.Guard == ReadOnly && !seen[e.Name] {
			seen[e.Name] = true
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the files your tools run code from are NOT read-only inside the writable grants (%s): the agent can write or create %s (and the linked git dirs' config and hooks); agent-sandbox audits them while the agent runs and after it ends, restoring git's code-running settings and quarantining hooks, and names every other change, but a tool that reads one in between runs what the agent wrote; --sandbox-backend landlock keeps them read-only", backend, why, strings.Join(names, ", "))
}
