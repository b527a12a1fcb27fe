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
