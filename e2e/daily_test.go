package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Daily use under the built-in engine (issue 12 items 1-5): the user's
// toolchains, git with the user's configuration, /etc, shell start-up and a
// fresh home work inside, while the credential files next to them stay
// out of reach. Each row runs the real program in the real sandbox; the
// attack half (a credential next to a granted tree) runs with its control.

type daily struct {
	t    *testing.T
	bin  string
	home string
	work string
	path string
}

func newDaily(t *testing.T) *daily {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := &daily{t: t, bin: buildAgentSandbox(t), home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	for _, dir := range []string{d.home, d.work} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d.path = agentPath()
	return d
}

func (d *daily) file(rel, content string, mode os.FileMode) string {
	d.t.Helper()
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.home, rel)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		d.t.Fatal(err)
	}
	return p
}

// run runs script in the shell agent (offline), or unsandboxed.
func (d *daily) run(sandboxed bool, script string, extra ...string) (string, int) {
	d.t.Helper()
	args := []string{"--sandbox-backend", "landlock", "--offline"}
	if !sandboxed {
		args = []string{"--no-sandbox"}
	}
	cmd := exec.Command(d.bin, append(append(args, extra...), "shell", "-c", script)...)
	cmd.Dir = d.work
	cmd.Env = withCover([]string{"HOME=" + d.home, "PATH=" + d.path, "LANG=C.UTF-8", "SHELL=/bin/sh"})
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatal(err)
	}
	return string(out), code
}

func TestDailyUse(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	t.Run("toolchain-on-path-runs-its-credentials-stay-hidden", func(t *testing.T) {
		d := newDaily(t)
		d.file(".cargo/bin/cargo", "#!/bin/sh\necho cargo-ran\n", 0o755)
		// The parts cargo needs (its registry) are granted; the rest of
		// the tree, which may hold a token, is not.
		d.file(".cargo/registry/index/helper.txt", "tree-file\n", 0o644)
		cred := d.file(".cargo/credentials.toml", "token = \"SECRET-CARGO\"\n", 0o600)
		d.path = filepath.Join(d.home, ".cargo/bin") + ":" + d.path
		script := `cargo && cat ` + filepath.Join(d.home, ".cargo/registry/index/helper.txt") + ` && { cat ` + cred + ` 2>/dev/null; true; }`
		out, code := d.run(false, script)
		if code != 0 || !strings.Contains(out, "SECRET-CARGO") {
			t.Fatalf("control: unsandboxed the script did not run or read the credential (exit %d): %s", code, out)
		}
		out, code = d.run(true, script)
		if code != 0 || !strings.Contains(out, "cargo-ran") || !strings.Contains(out, "tree-file") {
			t.Errorf("the toolchain on PATH did not run inside (exit %d): %s", code, out)
		}
		if strings.Contains(out, "SECRET-CARGO") {
			t.Errorf("~/.cargo/credentials.toml was readable inside: %s", out)
		}
		out, _ = d.run(true, "true", "--dry-run")
		if !strings.Contains(out, "toolchain "+filepath.Join(d.home, ".cargo")) {
			t.Errorf("--dry-run does not list the toolchain and why: %s", out)
		}
	})

	t.Run("linked-program-and-local-bin", func(t *testing.T) {
		d := newDaily(t)
		target := d.file(".local/share/pipx/venvs/tool/bin/tool", "#!/bin/sh\necho tool-ran\n", 0o755)
		link := filepath.Join(d.home, ".local/bin/tool")
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		d.file(".local/share/keyrings/login.keyring", "SECRET-KEYRING\n", 0o600)
		d.path = filepath.Join(d.home, ".local/bin") + ":" + d.path
		out, code := d.run(true, `tool; cat `+filepath.Join(d.home, ".local/share/keyrings/login.keyring")+` 2>/dev/null; true`)
		if !strings.Contains(out, "tool-ran") || code != 0 {
			t.Errorf("a ~/.local/bin program linked into a pipx venv did not run (exit %d): %s", code, out)
		}
		if strings.Contains(out, "SECRET-KEYRING") {
			t.Errorf("the keyring beside ~/.local/bin was readable: %s", out)
		}
	})

	t.Run("go-from-usr-local", func(t *testing.T) {
		if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
			t.Skip("needs the standard Go install at /usr/local/go")
		}
		d := newDaily(t)
		d.path = "/usr/local/go/bin:" + d.path
		if out, code := d.run(true, "go version"); code != 0 || !strings.Contains(out, "go version go") {
			t.Errorf("/usr/local/go/bin/go did not run inside (exit %d): %s", code, out)
		}
	})

	t.Run("git-with-user-config-and-worktree", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("needs git")
		}
		d := newDaily(t)
		dots := d.file("dotfiles/gitconfig", "[user]\n\tname = Sandbox Tester\n\temail = tester@example.com\n[init]\n\tdefaultBranch = main\n", 0o644)
		if err := os.Symlink(dots, filepath.Join(d.home, ".gitconfig")); err != nil {
			t.Fatal(err)
		}
		d.file(".git-credentials", "https://user:SECRET-GIT@example.com\n", 0o600)
		git := func(dir string, args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + d.home, "PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		main := filepath.Join(d.work, "main")
		if err := os.MkdirAll(main, 0o755); err != nil {
			t.Fatal(err)
		}
		git(main, "init", "-q")
		d.file(filepath.Join(main, "a.txt"), "a\n", 0o644)
		git(main, "add", "a.txt")
		git(main, "commit", "-qm", "first")
		git(main, "worktree", "add", "-q", filepath.Join(d.work, "wt"))
		for _, dir := range []string{main, filepath.Join(d.work, "wt")} {
			d.work = dir
			script := `echo b >> a.txt && git status --short && git diff --stat && git commit -qam second && git log --format='%an <%ae> %s' -1 && cat ~/.git-credentials 2>/dev/null; true`
			out, code := d.run(true, script)
			if code != 0 || !strings.Contains(out, "Sandbox Tester <tester@example.com> second") {
				t.Errorf("git in %s did not work with the user's configuration (exit %d): %s", dir, code, out)
			}
			if strings.Contains(out, "SECRET-GIT") {
				t.Errorf("~/.git-credentials was readable: %s", out)
			}
		}
	})

	t.Run("etc-and-venv-and-shell-startup", func(t *testing.T) {
		d := newDaily(t)
		d.file(".bashrc", "export SECRET=SECRET-BASHRC\n", 0o644)
		script := `cat /etc/hostname >/dev/null && cat /etc/os-release >/dev/null && test ! -s /etc/shadow && bash -i -c true 2>&1 | grep -i "permission denied"; echo shell-done`
		if _, err := os.Stat("/etc/debian_version"); err == nil {
			script = `cat /etc/debian_version >/dev/null && ` + script
		}
		if _, err := exec.LookPath("python3"); err == nil {
			script = `python3 -m venv "$TMPDIR/venv" && "$TMPDIR/venv/bin/python" -c "print(1)" && ` + script
		}
		out, code := d.run(true, script)
		if code != 0 || !strings.Contains(out, "shell-done") || strings.Contains(strings.ToLower(out), "permission denied") {
			t.Errorf("/etc, python3 -m venv or an interactive bash failed inside (exit %d): %s", code, out)
		}
		if out, _ := d.run(true, "cat ~/.bashrc"); strings.Contains(out, "SECRET-BASHRC") {
			t.Errorf("~/.bashrc (nono's credential list) was readable: %s", out)
		}
	})

	t.Run("unix-socket-granted-by-path", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("needs python3 for the socket probe")
		}
		d := newDaily(t)
		sock := filepath.Join(filepath.Dir(d.home), "agent.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("pong"))
				c.Close()
			}
		}()
		folder := filepath.Join(filepath.Dir(d.home), "agents", "sock")
		d.file(filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\n", 0o644)
		probe := `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("` + sock + `"); print(s.recv(4).decode())'`
		run := func(policy string, extra ...string) (string, error) {
			d.file(filepath.Join(folder, "sandbox", "nono.json"), policy, 0o644)
			cmd := exec.Command(d.bin, append(append([]string{"--sandbox-backend", "landlock"}, extra...), folder, "-c", probe)...)
			cmd.Dir = d.work
			cmd.Env = withCover([]string{"HOME=" + d.home, "PATH=" + d.path})
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		if out, err := run(`{"network": {"block": true}}`); err == nil || strings.Contains(out, "pong") {
			t.Errorf("an ungranted host socket was reachable (%v): %s", err, out)
		}
		granted := `{"network": {"block": true}, "filesystem": {"allow": ["` + sock + `"]}}`
		if out, err := run(granted); err != nil || !strings.Contains(out, "pong") {
			t.Errorf("the socket granted by path was not reachable (%v): %s", err, out)
		}
		if out, _ := run(granted, "--dry-run"); !strings.Contains(out, "unix socket reachable (granted by path): "+sock) {
			t.Errorf("--dry-run does not show the granted socket: %s", out)
		}
	})

	t.Run("fresh-home-config-created", func(t *testing.T) {
		d := newDaily(t)
		folder := filepath.Join(d.work, "..", "agents", "saver")
		d.file(filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\nconfig_paths = [\"~/.saver/agent\", \"~/.saver.json\"]\n", 0o644)
		d.file(filepath.Join(folder, "sandbox", "nono.json"), "{\"network\": {\"block\": true}}\n", 0o644)
		// The way agents save a config file: a new file beside it, then
		// rename (Claude Code falls back to copying when the rename fails).
		save := `mkdir -p ~/.saver/agent/sessions && echo s > ~/.saver/agent/sessions/one &&
t=~/.saver.json.tmp.$$ && echo '{"saved":true}' > $t && { mv -f $t ~/.saver.json 2>/dev/null || { cat $t > ~/.saver.json && rm -f $t; }; } && echo saved`
		cmd := exec.Command(d.bin, "--sandbox-backend", "landlock", folder, "-c", save)
		cmd.Dir = d.work
		cmd.Env = withCover([]string{"HOME=" + d.home, "PATH=" + d.path})
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "saved") {
			t.Errorf("a fresh home could not be written (%v): %s", err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(d.home, ".saver.json")); !strings.Contains(string(b), `"saved":true`) {
			t.Errorf("~/.saver.json on the host holds %q", b)
		}
		if _, err := os.Stat(filepath.Join(d.home, ".saver/agent/sessions/one")); err != nil {
			t.Errorf("the session file did not reach the host: %v", err)
		}
		ents, _ := os.ReadDir(d.home)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp.") {
				t.Errorf("a temporary file reached the host's home: %s", e.Name())
			}
		}
	})
}
