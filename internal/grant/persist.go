package grant

import "path/filepath"

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
}

// PersistencePaths are the absolute persistence paths of this home.
func (h Home) PersistencePaths() []string {
	out := make([]string, len(persistence))
	for i, r := range persistence {
		out[i] = filepath.Join(h.Dir, r)
	}
	return out
}
