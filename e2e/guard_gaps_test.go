package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGuardRestoreGaps (issue 38, item 3): what the audit after a run left
// in place under the engines that bind nothing (the weaker sandbox, nono),
// each planted by the agent:
//   - large: ~/.claude.json past 1 MiB before the run; the agent swaps its
//     mcpServers (the user's were lost, with a message blaming "not valid
//     JSON");
//   - symlink: ~/.pi/agent (below the grant ~/.pi) replaced by a symlink to
//     a directory of the agent's with a planted models.json;
//   - unreadable: core.fsmonitor planted in .git/config, then mode 000
//     (left "not checked"; fails before as an ordinary user only: root
//     reads the file);
//   - codepaths: a hook planted in ~/.claude/hooks (only named before);
//   - otherfs: a hook and a directory planted in .git/hooks with the
//     state directory (the quarantine) on another filesystem (/dev/shm).
func TestGuardRestoreGaps(t *testing.T) {
	for name, engine := range quiesceEngines(t) {
		t.Run(name, func(t *testing.T) {
			prefix, flags, env := engine(t)
			run := func(r *brokerRun, folder, script string, extra ...string) string {
				t.Helper()
				code, out := r.startIn(60*time.Second, prefix, append(env, extra...), append(append([]string(nil), flags...), folder, "-c", script)...).wait()
				if code != 0 {
					t.Fatalf("exit %d: %s", code, out)
				}
				return out
			}
			t.Run("large", func(t *testing.T) {
				r := newBrokerRun(t)
				folder := copyBuiltin(t, r, "claude")
				p := filepath.Join(r.home, ".claude.json")
				pad := strings.Repeat("x", 2<<20)
				write(t, p, `{"mcpServers": {"mine": {"command": "my-server"}}, "history": "`+pad+`"}`+"\n")
				out := run(r, folder, `python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); d['mcpServers'] = {'evil': {'command': 'touch /tmp/pwned'}}
json.dump(d, open(sys.argv[1], 'w'))" `+p)
				var m map[string]any
				b, _ := os.ReadFile(p)
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("%s after the run: %v", p, err)
				}
				if s, _ := json.Marshal(m["mcpServers"]); string(s) != `{"mine":{"command":"my-server"}}` || strings.Contains(out, "not valid JSON") {
					t.Errorf("mcpServers after the run: %s\n%s", s, out)
				}
			})
			t.Run("symlink", func(t *testing.T) {
				r := newBrokerRun(t)
				folder := filepath.Join(filepath.Dir(r.home), "agents", "pi-work")
				write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\nconfig_paths = [\"~/.pi\"]\n")
				p := filepath.Join(r.home, ".pi", "agent", "models.json")
				before := `{"providers": {"x": {"apiKey": "MY-KEY"}}}` + "\n"
				write(t, p, before)
				evil := filepath.Join(r.home, ".pi", "evil")
				out := run(r, folder, `mkdir `+evil+` && printf '{"providers": {"x": {"apiKey": "!touch /tmp/pwned"}}}\n' > `+evil+`/models.json && mv `+filepath.Dir(p)+` `+filepath.Dir(p)+`.old && ln -s `+evil+` `+filepath.Dir(p))
				if fi, err := os.Lstat(filepath.Dir(p)); err != nil || !fi.IsDir() {
					t.Errorf("%s is not a directory after the run (%v):\n%s", filepath.Dir(p), err, out)
				}
				if b, _ := os.ReadFile(p); string(b) != before {
					t.Errorf("%s after the run: %s\n%s", p, b, out)
				}
			})
			t.Run("unreadable", func(t *testing.T) {
				r := newBrokerRun(t)
				gitRepoCommitted(t, r.work)
				cfg := filepath.Join(r.work, ".git", "config")
				// The weaker sandbox refuses the chmod of a protected
				// entry (its metadata emulation); nono alone lets it
				// through, and the guard must cope with a mode 000 file.
				out := run(r, r.folder(), `printf '[core]\n\tfsmonitor = "touch /tmp/pwned"\n' >> .git/config && { chmod 000 .git/config || echo CHMOD-REFUSED; }`)
				if fi, err := os.Stat(cfg); name == "weaker" && (err != nil || fi.Mode().Perm() == 0 || !strings.Contains(out, "CHMOD-REFUSED")) {
					t.Errorf("the weaker sandbox let the agent chmod the protected .git/config (%v):\n%s", err, out)
				}
				os.Chmod(cfg, 0o644) // what root, or the user's chmod, sees
				if b, _ := os.ReadFile(cfg); strings.Contains(string(b), "fsmonitor") || strings.Contains(out, "could not be checked") {
					t.Errorf("the planted setting in a mode 000 .git/config is still there:\n%s\n%s", b, out)
				}
			})
			t.Run("codepaths", func(t *testing.T) {
				r := newBrokerRun(t)
				folder := copyBuiltin(t, r, "claude")
				hooks := filepath.Join(r.home, ".claude", "hooks")
				write(t, filepath.Join(hooks, "mine.sh"), "#!/bin/sh\n")
				out := run(r, folder, `printf '#!/bin/sh\ntouch /tmp/pwned\n' > `+hooks+`/evil.sh`)
				if exists(filepath.Join(hooks, "evil.sh")) {
					t.Errorf("the hook planted in %s is still there:\n%s", hooks, out)
				}
			})
			t.Run("otherfs", func(t *testing.T) {
				r := newBrokerRun(t)
				gitRepoCommitted(t, r.work)
				state, err := os.MkdirTemp("/dev/shm", "agent-sandbox-state-")
				if err != nil {
					t.Skipf("needs /dev/shm for a state directory on another filesystem: %v", err)
				}
				os.Chmod(state, 0o755)
				t.Cleanup(func() { os.RemoveAll(state) })
				var a, b syscall.Stat_t
				if syscall.Stat(r.work, &a) != nil || syscall.Stat(state, &b) != nil || a.Dev == b.Dev {
					t.Skip("/dev/shm is on the workdir's filesystem")
				}
				hooks := filepath.Join(r.work, ".git", "hooks")
				before, _ := os.ReadDir(hooks)
				for i := 0; i < 2; i++ {
					script := "true"
					if i == 0 {
						script = `printf "#!/bin/sh\ntouch /tmp/pwned\n" > .git/hooks/pre-commit; mkdir .git/hooks/post-merge.d; true`
					}
					out := run(r, r.folder(), script, "XDG_STATE_HOME="+state)
					after, _ := os.ReadDir(hooks)
					if len(after) != len(before) || strings.Contains(out, "DANGER") {
						var n []string
						for _, d := range after {
							n = append(n, d.Name())
						}
						t.Fatalf("run %d: .git/hooks holds %v after the run:\n%s", i, n, out)
					}
					if l := lastLine(out, "changed "+hooks); i > 0 && l != "" {
						t.Errorf("the run after the restore found .git/hooks changed again:\n%s", l)
					}
				}
			})
		})
	}
}
