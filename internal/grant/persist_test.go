package grant

import (
	"strings"
	"testing"
)

func TestPersistence(t *testing.T) {
	h, _ := testHome(t)
	c := Checker{Home: h}
	for _, p := range []string{"~/.local/bin", "~/.local/bin/tool", "~/.config/autostart", "~/.config/systemd/user/x.service", "~/.gitconfig", "~/.config/git", "~/.vimrc", "~/.config/nvim/init.lua", "~/bin", "~/.pam_environment",
		"~/.local/lib/python3.11/site-packages", "~/.local/share/systemd/user", "~/.local/share/dbus-1/services",
		"~/.cargo/bin", "~/go/bin", "~/.vscode/extensions", "~/.config/Code/User", "~/.config/mise", "~/.bashrc.d"} {
		if _, err := c.Resolve(p, true); err == nil || !strings.Contains(err.Error(), "from where the host runs code later") {
			t.Errorf("writable %q: %v, want the persistence refusal", p, err)
		}
		if _, err := c.Resolve(p, false); err != nil {
			t.Errorf("read-only %q refused: %v", p, err)
		}
	}
	for _, p := range []string{"~/.claude", "~/.local/share/opencode", "~/.config/opencode", "~/src/project", "~/.pi/agent"} {
		if _, err := c.Resolve(p, true); err != nil {
			t.Errorf("writable %q refused: %v", p, err)
		}
	}
}
