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

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
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
