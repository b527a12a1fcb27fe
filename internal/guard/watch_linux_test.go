//go:build linux

package guard

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// waitFor polls cond for up to 20 s (a loaded CI machine, with the e2e
// suite beside it, has delayed inotify deliveries past 5 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// While the agent runs: a read-only entry the host replaces is handed to
// Reprotect at once, a git configuration that gains code-running settings
// is restored in place (same inode: no new directory entry for a bind to
// miss); events from before
// Watch (queued) count too.
func TestWatch(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	cfg := filepath.Join(w, ".git", "config")
	before := "[core]\n\tbare = false\n"
	write(t, cfg, before)
	g := newTest(t, w,
		protect.Entry{Path: cfg, Name: protect.GitConfig, Guard: protect.ReadOnly, Format: protect.FormatGit})
	// Queued before Watch: the host replaces the config (git's way).
	write(t, cfg+".lock", before+"[user]\n\tname = host\n")
	if err := os.Rename(cfg+".lock", cfg); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	g.Watch(func(p string) error {
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		return nil
	})
	waitFor(t, "Reprotect of the replaced config", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(asked) > 0 && asked[0] == cfg
	})
	// The agent writes through the window: restored in place.
	f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	ino := func() uint64 { fi, _ := os.Stat(cfg); _, i := devIno(fi); return i }
	was := ino()
	f.WriteString("[core]\n\tfsmonitor = touch /tmp/pwned\n")
	f.Close()
	waitFor(t, "the planted setting restored", func() bool { return !strings.Contains(read(t, cfg), "fsmonitor") })
	if !strings.Contains(read(t, cfg), "name = host") {
		t.Errorf("the host's own harmless change was lost by the restore:\n%s", read(t, cfg))
	}
	if ino() != was {
		t.Errorf("the restore during the run replaced the file (a new directory entry) instead of rewriting it")
	}
	var out bytes.Buffer
	g.End(&out, quiet(t), nil, nil)
	if !strings.Contains(out.String(), "fsmonitor") {
		t.Errorf("findings: %s", out.String())
	}
	if len(g.Windows()) == 0 {
		t.Errorf("no window was counted")
	}
}

// A tool that updates a read-only entry by git's lock protocol (create
// NAME.lock, rename it over NAME) and finds the rename refused removes its
// lock file: the run's end names the refusal as the sandbox's, with the
// `why` and --allow-edit to run (issue 39, item 7). A lock renamed into
// place (the host's own git) is no refusal, nor is any lock file when
// the engine binds nothing (the rename goes through there).
func TestWatchRefusedLock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bound   bool
		renamed bool
		want    bool
	}{
		{"refused", true, false, true},
		{"host-renamed", true, true, false},
		{"not-bound", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := filepath.EvalSymlinks(t.TempDir())
			w := filepath.Join(root, "w")
			cfg := filepath.Join(w, ".git", "config")
			write(t, cfg, "[core]\n\tbare = false\n")
			g := newTest(t, w,
				protect.Entry{Path: cfg, Name: protect.GitConfig, Why: "Git runs the commands its settings name", Guard: protect.ReadOnly, Format: protect.FormatGit},
				protect.Entry{Path: filepath.Join(w, ".envrc"), Name: ".envrc", Why: "direnv runs it on cd", Guard: protect.ReadOnly})
			var r Reprotect
			if tc.bound {
				r = func(string) error { return nil }
			}
			g.Watch(r)
			write(t, cfg+".lock", "[user]\n\tname = x\n")
			if tc.renamed {
				if err := os.Rename(cfg+".lock", cfg); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(cfg + ".lock"); err != nil {
				t.Fatal(err)
			}
			// A marker event after the lock's: once it is seen, so
			// were the lock's.
			// (Bound: the host creates .envrc, which is bound again;
			// not bound: a planted setting, which is restored.)
			if tc.bound {
				write(t, filepath.Join(w, ".envrc"), "echo marker\n")
			} else {
				write(t, cfg, "[core]\n\tfsmonitor = touch /tmp/x\n")
			}
			waitFor(t, "the marker's event", func() bool {
				if tc.bound {
					return len(g.Windows()) > 0 // the marker was bound again
				}
				return len(g.Findings()) > 0 // the marker was audited
			})
			var out bytes.Buffer
			g.End(&out, quiet(t), nil, nil)
			got := strings.Contains(out.String(), "the sandbox refused a change to .git/config")
			if got != tc.want {
				t.Fatalf("refusal named: %v, want %v:\n%s", got, tc.want, out.String())
			}
			if tc.want {
				for _, w := range []string{"git runs the commands its settings name", "`agent-sandbox why --write .git/config`", "`--allow-edit .git/config`", "Device or resource busy"} {
					if !strings.Contains(out.String(), w) {
						t.Errorf("the note does not say %q:\n%s", w, out.String())
					}
				}
			}
		})
	}
}
