package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/grant"
)

// TestUserTools: the trees of PATH's programs and git's configuration,
// each checked like a read grant: a tree holding a credential path is
// narrowed or refused, the home and system prefixes are never granted.
func TestUserTools(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	mk := func(p string, link string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if link != "" {
			if err := os.Symlink(link, p); err != nil {
				t.Fatal(err)
			}
			return p
		}
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk(filepath.Join(home, ".cargo/bin/cargo"), "")
	mk(filepath.Join(home, ".cargo/registry/cache/x.crate"), "")
	mk(filepath.Join(home, ".cargo/credentials.toml"), "")
	mk(filepath.Join(home, ".rustup/toolchains/x"), "")
	mk(filepath.Join(home, ".local/bin/plain"), "")
	venv := mk(filepath.Join(home, ".local/share/pipx/venvs/tool/bin/tool"), "")
	mk(filepath.Join(home, ".local/bin/tool"), venv)
	mk(filepath.Join(home, ".local/share/keyrings/k"), "")
	mk(filepath.Join(root, "opt/thing/bin/thing"), "")
	mk(filepath.Join(root, "proj/node_modules/.bin/x"), "../x/cli.js")
	mk(filepath.Join(root, "proj/node_modules/x/cli.js"), "")
	mk(filepath.Join(home, "bin/mine"), "")
	mk(filepath.Join(home, ".ssh/bin/evil"), "")
	dots := mk(filepath.Join(home, "dotfiles/gitconfig"), "")
	mk(filepath.Join(home, ".gitconfig"), dots)
	mk(filepath.Join(home, ".config/git/ignore"), "")
	mk(filepath.Join(home, ".config/git/credentials"), "")

	h := grant.Home{Dir: home, XDGConfig: filepath.Join(home, ".config"), XDGStateHome: filepath.Join(home, ".local/state"), GOOS: "linux"}
	c := grant.Checker{Home: h}
	path := strings.Join([]string{
		filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".local/bin"), filepath.Join(root, "opt/thing/bin"),
		filepath.Join(root, "proj/node_modules/.bin"), filepath.Join(home, "bin"), filepath.Join(home, ".ssh/bin"),
		"/usr/bin", "relative/bin",
	}, ":")
	tools, config, links, notes := userTools(h, path, c, []string{filepath.Join(root, "work")}, func(p string) bool { return strings.HasPrefix(p, "/usr/") })
	got := map[string]bool{}
	for _, tc := range tools {
		got[tc.Path] = true
	}
	for _, want := range []string{
		filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".cargo/registry"), filepath.Join(home, ".rustup"), filepath.Join(home, ".local/bin"),
		filepath.Join(home, ".local/share/pipx/venvs/tool"), filepath.Join(root, "opt/thing"),
		filepath.Join(root, "proj/node_modules"), filepath.Join(home, "bin"),
	} {
		if !got[want] {
			t.Errorf("toolchain %s not granted; got %+v", want, tools)
		}
	}
	// ~/.cargo holds a registry token: only the parts cargo needs are
	// granted, so a credentials file the host writes during the run is in
	// none of them.
	for _, not := range []string{home, filepath.Join(home, ".cargo"), filepath.Join(home, ".cargo/credentials.toml"), filepath.Join(home, ".local"), filepath.Join(home, ".ssh/bin"), filepath.Join(home, ".ssh"), "/usr", "/usr/bin"} {
		if got[not] {
			t.Errorf("%s granted; it must not be", not)
		}
	}
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, "\n"), ".ssh") {
		t.Errorf("the refused ~/.ssh/bin is not noted: %q", notes)
	}
	wantConfig := []string{dots, filepath.Join(home, ".config/git/ignore")}
	if strings.Join(config, ",") != strings.Join(wantConfig, ",") {
		t.Errorf("git configuration %q, want %q (never ~/.config/git/credentials)", config, wantConfig)
	}
	if len(links) != 1 || links[0].Path != filepath.Join(home, ".gitconfig") || links[0].Target != dots {
		t.Errorf("links %+v", links)
	}
}

// TestUserToolsAgentLinks: a PATH directory the agent can write, or one
// reached through a symlink it can write, grants nothing: the agent could
// repoint a link there at any tree of the user's and widen its next run.
func TestUserToolsAgentLinks(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	for _, d := range []string{filepath.Join(home, "other/tool"), filepath.Join(home, "secret/bin"), filepath.Join(work, "bin"), filepath.Join(home, "links")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{
		{filepath.Join(home, "other/tool"), filepath.Join(work, "bin/tool")}, // a link inside the workdir
		{filepath.Join(home, "secret/bin"), filepath.Join(work, "pathdir")},  // a PATH entry through a workdir link
		{filepath.Join(home, "other/tool"), filepath.Join(work, "hop")},      // ...and a hop through one
		{filepath.Join(work, "hop"), filepath.Join(home, "links/tool")},      // from a directory the agent cannot write
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	h := grant.Home{Dir: home, XDGConfig: filepath.Join(home, ".config"), XDGStateHome: filepath.Join(home, ".local/state"), GOOS: "linux"}
	path := strings.Join([]string{filepath.Join(work, "bin"), filepath.Join(work, "pathdir"), filepath.Join(home, "links")}, ":")
	tools, _, _, notes := userTools(h, path, grant.Checker{Home: h}, []string{work}, func(string) bool { return false })
	for _, tc := range tools {
		if grant.Within(tc.Path, filepath.Join(home, "other")) || grant.Within(tc.Path, filepath.Join(home, "secret")) {
			t.Errorf("%s granted (%s): the agent chose it", tc.Path, tc.Why)
		}
	}
	if n := strings.Join(notes, "\n"); !strings.Contains(n, "pathdir") || !strings.Contains(n, filepath.Join(work, "hop")) {
		t.Errorf("the agent's links are not named: %q", notes)
	}
}
