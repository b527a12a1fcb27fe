package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGuardConfigByPath (issue 38, item 2): a folder of the user's own
// (claude-work, command /bin/sh) that grants ~/.claude, without the
// built-in claude folder's code_keys, lets the agent add hooks to
// ~/.claude/settings.json. What runs code is a property of the file,
// whoever's folder grants it: the audit restores it, under the view and
// the weaker sandbox.
func TestGuardConfigByPath(t *testing.T) {
	for _, engine := range []string{"view", "weaker"} {
		t.Run(engine, func(t *testing.T) {
			skipWithoutLandlock(t)
			var prefix, env []string
			if engine == "weaker" {
				prefix, env = noUserns(t), []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}
			}
			r := newBrokerRun(t)
			settings := filepath.Join(r.home, ".claude", "settings.json")
			write(t, settings, `{"theme": "dark"}`+"\n")
			folder := filepath.Join(filepath.Dir(r.home), "agents", "claude-work")
			write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\nconfig_paths = [\"~/.claude\"]\n")
			pwned := filepath.Join(filepath.Dir(r.home), "PWNED")
			script := `printf '{"theme": "dark", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch ` + pwned + `"}]}]}}\n' > ` + settings
			code, out := r.startIn(60*time.Second, prefix, env, "--sandbox-backend", "landlock", folder, "-c", script).wait()
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			b, _ := os.ReadFile(settings)
			if strings.Contains(string(b), "hooks") {
				t.Errorf("the hooks the agent planted in %s are still there after the run of a folder of the user's own that grants ~/.claude:\n%s\n%s", settings, b, out)
			}
			if !strings.Contains(out, "settings of "+settings) {
				t.Errorf("the run does not say it restored %s:\n%s", settings, out)
			}
		})
	}
}
