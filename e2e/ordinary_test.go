package e2e

// Inside the sandbox, an ordinary Linux system (issue 23, items 2-4): what
// shells and everyday tools expect of /dev, of listing directories, of
// /var/tmp and of the caller's umask. Each row runs the same script
// unsandboxed first (control: the script works on this machine) and then
// in the view.

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestOrdinarySystem(t *testing.T) {
	skipWithoutLandlock(t)
	rows := []struct {
		name   string
		needs  []string
		umask  string
		script string
		want   []string
	}{
		{name: "dev-links-and-process-substitution", needs: []string{"bash"},
			script: `echo to-stderr > /dev/stderr && echo to-stdout > /dev/stdout && ls /dev/fd/ >/dev/null && bash -c 'diff <(echo a) <(echo a) && echo procsub-ok'`,
			want:   []string{"to-stderr", "to-stdout", "procsub-ok"}},
		{name: "own-ptys", needs: []string{"script"},
			script: `script -qec 'tty' /dev/null | grep -q '^/dev/pts/' && echo pty-ok`,
			want:   []string{"pty-ok"}},
		{name: "tmux", needs: []string{"tmux"},
			script: `tmux -S ./tm new-session -d 'sleep 5' && tmux -S ./tm list-sessions >/dev/null && tmux -S ./tm kill-server && echo tmux-ok`,
			want:   []string{"tmux-ok"}},
		{name: "ssh-keygen", needs: []string{"ssh-keygen"},
			script: `ssh-keygen -q -t ed25519 -N '' -f ./k && test -s ./k.pub && echo keygen-ok`,
			want:   []string{"keygen-ok"}},
		{name: "list-root-and-usr",
			script: `ls / | grep -qx usr && ls /usr | grep -qx bin && find /usr/bin -maxdepth 1 -name 'sh*' | grep -q . && echo list-ok`,
			want:   []string{"list-ok"}},
		{name: "var-tmp-writable",
			script: `f=/var/tmp/agent-sandbox-e2e-$$ && echo x > "$f" && cat "$f" && rm "$f" && echo vartmp-ok`,
			want:   []string{"vartmp-ok"}},
		{name: "umask-0177", umask: "0177",
			script: `umask; touch f && ls -l f | cut -c1-10`,
			want:   []string{"0177", "-rw-------"}},
		{name: "umask-0123", umask: "0123",
			script: `umask; touch f && echo umask-ok`,
			want:   []string{"0123", "umask-ok"}},
		{name: "umask-0027", umask: "0027",
			script: `umask; touch g && ls -l g | cut -c1-10`,
			want:   []string{"0027", "-rw-r-----"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			for _, n := range row.needs {
				if _, err := exec.LookPath(n); err != nil {
					t.Skipf("needs %s (.ci/run installs it)", n)
				}
			}
			d := newDaily(t)
			for _, sandboxed := range []bool{false, true} {
				var out string
				var code int
				if row.umask != "" {
					out, code = d.runUmask(row.umask, sandboxed, row.script)
				} else {
					out, code = d.run(sandboxed, row.script)
				}
				ok := code == 0
				for _, w := range row.want {
					ok = ok && strings.Contains(out, w)
				}
				if !ok && !sandboxed {
					t.Fatalf("control: unsandboxed the script failed (exit %d): %s", code, out)
				}
				if !ok {
					t.Errorf("in the sandbox (exit %d), want %q: %s", code, row.want, out)
				}
				for _, f := range []string{"f", "g", "k", "k.pub", "tm"} {
					os.Remove(d.work + "/" + f)
				}
			}
		})
	}
}

// runUmask is run with agent-sandbox started under the umask u.
func (d *daily) runUmask(u string, sandboxed bool, script string) (string, int) {
	d.t.Helper()
	args := "--sandbox-backend landlock --offline"
	if !sandboxed {
		args = "--no-sandbox"
	}
	cmd := exec.Command("/bin/sh", "-c", "umask "+u+" && exec \"$0\" "+args+" shell -c \"$1\"", d.bin, script)
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

// TestGitSubdirectory: started in a subdirectory of a repository, git
// inside finds the repository (rev-parse, status, a commit of a file in
// the workdir), writes stay in the workdir (the rest of the working tree
// is read-only), and the repository's git dir has the protection of a
// workdir's own .git (its config stays read-only).
func TestGitSubdirectory(t *testing.T) {
	skipWithoutLandlock(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: apt-get install git (.ci/run does)")
	}
	r := newBrokerRun(t)
	gitRepoCommitted(t, r.work)
	sub := r.work + "/pkg/inner"
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `cd ` + sub + ` && git rev-parse --show-toplevel && test -z "$(git status --porcelain -- .)" && echo status-ok && echo $$ > here.txt && git add here.txt && git -c user.name=a -c user.email=a@e commit -qm sub && echo commit-ok
echo y > ` + r.work + `/top.txt 2>/dev/null && echo TOP-WRITTEN
git config core.fsmonitor "touch /tmp/x" 2>/dev/null && echo CONFIG-WRITTEN
true`
	for _, sandboxed := range []bool{false, true} {
		args := []string{"--sandbox-backend", "landlock", "--workdir", sub, r.folder(), "-c", script}
		if !sandboxed {
			args = []string{"--no-sandbox", "--workdir", sub, r.folder(), "-c", script}
		}
		code, out := r.cli(60*time.Second, nil, args...)
		ok := code == 0 && strings.Contains(out, r.work+"\n") && strings.Contains(out, "status-ok") && strings.Contains(out, "commit-ok")
		if !sandboxed {
			if !ok || !strings.Contains(out, "TOP-WRITTEN") {
				t.Fatalf("control: exit %d: %s", code, out)
			}
			hostGit(r.work, r.home, "config", "--unset", "core.fsmonitor")
			os.Remove(r.work + "/top.txt")
			continue
		}
		if !ok {
			t.Errorf("git inside did not work from the subdirectory (exit %d): %s", code, out)
		}
		if strings.Contains(out, "TOP-WRITTEN") || strings.Contains(out, "CONFIG-WRITTEN") {
			t.Errorf("a write outside the workdir, or to the repository's config, succeeded: %s", out)
		}
	}
}
