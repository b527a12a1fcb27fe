package grant

import (
	"path/filepath"
	"strings"
)

// persistence are paths in the home from which the user's own programs
// later run code or take settings that run code (session autostart,
// systemd user units, the login environment, PATH directories, git's,
// the editors' and the shells' configuration beyond nono's list): a
// writable grant of one would let the agent plant code that runs outside
// the sandbox. Read grants of them are fine.
var persistence = []string{
	".config/autostart", ".config/systemd/user", ".config/environment.d", ".pam_environment",
	".xsessionrc", ".xprofile", ".xinitrc", ".xsession",
	".local/bin", "bin", ".local/share/applications",
	".gitconfig", ".config/git",
	".bash_aliases", ".config/direnv", ".ipython",
	".vimrc", ".vim", ".config/nvim", ".emacs", ".emacs.d", ".config/emacs",
	".tmux.conf", ".config/tmux",
	// Python's user site (a .pth file there runs in every later python),
	// user services and D-Bus activation, the bin directories toolchains
	// put on PATH, editor extensions and settings, per-directory tool
	// versions and hooks, shell snippet directories and frameworks.
	".local/lib", ".local/share/systemd", ".local/share/dbus-1",
	".cargo/bin", "go/bin", ".npm-global/bin", ".deno/bin", ".bun/bin",
	".vscode", ".vscode-server", ".config/Code", ".config/Cursor", ".cursor",
	".config/mise", ".config/fish", ".bashrc.d", ".profile.d", ".oh-my-zsh", ".zshrc.d",
}

// PersistencePaths are the absolute persistence paths of this home: a
// writable grant may neither contain one nor lie inside one. The ones
// under ~/.config are also listed under $XDG_CONFIG_HOME when that
// differs.
func (h Home) PersistencePaths() []string {
	out := make([]string, 0, 2*len(persistence))
	dotConfig := filepath.Join(h.Dir, ".config")
	for _, r := range persistence {
		out = append(out, filepath.Join(h.Dir, r))
		if rest, ok := strings.CutPrefix(r, ".config/"); ok && h.XDGConfig != "" && h.XDGConfig != dotConfig {
			out = append(out, filepath.Join(h.XDGConfig, rest))
		}
	}
	return out
}
