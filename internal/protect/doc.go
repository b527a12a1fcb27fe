// Package protect owns the ledger of a run: every path inside the agent's
// writable grants that makes the user's own tools, or the agent's next
// start outside the sandbox, run code. Git's configuration and hooks (in
// the workdir's .git, a linked worktree's git dir and its common dir,
// submodules' git dirs, and wherever core.hooksPath and include.path
// point, whether that exists yet or not), editor tasks (.vscode, .idea),
// agent settings and commands (.claude, .codex, .mcp.json), direnv's
// .envrc, .gitmodules, and the agent's own code-running config
// (agent.toml's code_paths and code_keys). An agent that writes one of
// them plants code that the user's next `git status`, folder open, `cd`
// or plain `claude` runs outside the sandbox.
//
// Build computes the ledger once, from the plan: each entry with its
// writable root, why it is protected and how (Guard). The namespace view
// (internal/backend/landlock) binds the read-only entries read-only and
// binds them again when the host replaces one; internal/guard watches them
// while the agent runs and audits them after it. A user whose agent must
// edit some of them names them in agent.toml's allow_edit or with
// --allow-edit. The package reads the workdir's .git and the git
// configuration files (with git's grammar: internal/gitconfig) and writes
// nothing.
package protect
