package e2e

import (
	"archive/zip"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestToolchainCaches (issue 23 item 1): a Go module whose dependency is
// in the host's module cache builds and tests inside, offline, on the
// first sandboxed run, with the host's build cache as the base of a
// private, writable layer; the host's caches are byte for byte what they
// were. Before, `go build` failed ("failed to initialize build cache ...
// read-only file system"). The dependency comes from a file proxy the test
// makes (no network).
func TestToolchainCaches(t *testing.T) {
	skipWithoutLandlock(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH")
	}
	r := newBrokerRun(t)
	proxy := filepath.Join(filepath.Dir(r.home), "proxy")
	writeModule(t, proxy, "example.com/dep", "v1.0.0", "package dep\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n")
	write(t, filepath.Join(r.work, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	write(t, filepath.Join(r.work, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Answer()) }\n")
	write(t, filepath.Join(r.work, "main_test.go"), "package main\n\nimport (\n\t\"testing\"\n\n\t\"example.com/dep\"\n)\n\nfunc TestAnswer(t *testing.T) {\n\tif dep.Answer() != 42 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n")
	goDir := filepath.Dir(goBin)
	hostEnv := []string{"HOME=" + r.home, "PATH=" + goDir + ":/usr/bin:/bin", "GOPROXY=file://" + proxy, "GONOSUMDB=example.com", "GONOSUMCHECK=1", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
	// The host downloads the dependency and builds once: its caches
	// hold what the sandboxed build needs.
	cmd := exec.Command(goBin, "build", "./...")
	cmd.Dir, cmd.Env = r.work, hostEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("host build: %v\n%s", err, out)
	}
	caches := []string{filepath.Join(r.home, ".cache", "go-build"), filepath.Join(r.home, "go", "pkg", "mod")}
	// Go makes its module cache read-only; the temporary home must go.
	t.Cleanup(func() {
		filepath.WalkDir(r.home, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	before := treeSum(t, caches...)
	code, out := r.cli(180*time.Second, []string{"PATH=" + goDir + ":" + agentPath(), "GOTOOLCHAIN=local"},
		"--sandbox-backend", "landlock", "--offline", r.folder(), "-c", "go build -o app . && ./app && go test ./... && echo GO-OK")
	if code != 0 || !strings.Contains(out, "42") || !strings.Contains(out, "GO-OK") {
		t.Errorf("go build / go test inside, offline, failed (exit %d): %s", code, out)
	}
	if after := treeSum(t, caches...); after != before {
		t.Errorf("the host's Go caches changed during the sandboxed build")
	}
	// The agent's writes are in its own layer, kept for its next run.
	if _, err := os.Stat(filepath.Join(r.home, ".local", "state", "agent-sandbox", "agents", "sh", "caches", projectKeyOf(r.work), "go-build", "upper")); err != nil {
		t.Errorf("no private layer of the build cache in the agent's state: %v", err)
	}
}

// writeModule lays out module path@version in a GOPROXY=file:// tree.
func writeModule(t *testing.T, proxy, path, version, src string) {
	t.Helper()
	dir := filepath.Join(proxy, path, "@v")
	gomod := "module " + path + "\n\ngo 1.21\n"
	write(t, filepath.Join(dir, "list"), version+"\n")
	write(t, filepath.Join(dir, version+".info"), fmt.Sprintf(`{"Version":%q,"Time":"2024-01-01T00:00:00Z"}`, version))
	write(t, filepath.Join(dir, version+".mod"), gomod)
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, body := range map[string]string{"go.mod": gomod, "dep.go": src} {
		w, err := z.Create(path + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// treeSum hashes every path, mode, size and content below dirs.
func treeSum(t *testing.T, dirs ...string) string {
	t.Helper()
	var lines []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				lines = append(lines, p+" err")
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return nil
			}
			line := fmt.Sprintf("%s %v %d %d", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
			if info.Mode().IsRegular() {
				if b, err := os.ReadFile(p); err == nil {
					line += fmt.Sprintf(" %x", sha256.Sum256(b))
				}
			}
			lines = append(lines, line)
			return nil
		})
	}
	sort.Strings(lines)
	return fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(lines, "\n"))))
}

// projectKeyOf is the name of the working directory work among an
// agent's cache layers (internal/backend/landlock's projectKey).
func projectKeyOf(work string) string {
	h := sha256.Sum256([]byte(filepath.Clean(work)))
	return fmt.Sprintf("%x", h[:8])
}
