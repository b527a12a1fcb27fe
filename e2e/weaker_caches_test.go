package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The weaker sandbox's toolchain caches (issue 37, item 3): without a
// view there is no overlay, so each cache is the run's own per project:
// a copy of the host's (reflinks where the filesystem can, never hard
// links), or for Go's module cache one Go fills from the host's download
// cache read-only. Builds work offline from the host's warm caches, as in
// the view, and the host's caches are byte for byte what they were.
// Before, `go build` failed (the build cache was not granted) and npm ci
// and cargo build failed too.

// goProject lays out a module of r.work that needs example.com/dep from a
// file proxy, and builds it on the host once so that the host's caches
// hold everything; it returns the go command's directory, the host's Go
// caches and the module's expected output.
func goProject(t *testing.T, r *brokerRun, work string) (string, []string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH")
	}
	proxy := filepath.Join(filepath.Dir(r.home), "proxy")
	if _, err := os.Stat(proxy); err != nil {
		writeModule(t, proxy, "example.com/dep", "v1.0.0", "package dep\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n")
	}
	write(t, filepath.Join(work, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	write(t, filepath.Join(work, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(\"ANSWER\", dep.Answer()) }\n")
	write(t, filepath.Join(work, "main_test.go"), "package main\n\nimport (\n\t\"testing\"\n\n\t\"example.com/dep\"\n)\n\nfunc TestAnswer(t *testing.T) {\n\tif dep.Answer() != 42 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n")
	goDir := filepath.Dir(goBin)
	cmd := exec.Command(goBin, "build", "./...")
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + r.home, "PATH=" + goDir + ":/usr/bin:/bin", "GOPROXY=file://" + proxy, "GONOSUMDB=example.com", "GONOSUMCHECK=1", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("host build: %v\n%s", err, out)
	}
	// Go makes its module cache read-only; the temporary home must go.
	t.Cleanup(func() {
		filepath.WalkDir(filepath.Dir(r.home), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	return goDir, []string{filepath.Join(r.home, ".cache", "go-build"), filepath.Join(r.home, "go", "pkg", "mod")}
}

func TestWeakerToolchainCaches(t *testing.T) {
	skipWithoutLandlock(t)
	r := newBrokerRun(t)
	r.prefix = noUserns(t)
	weaker := []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}

	t.Run("go", func(t *testing.T) {
		goDir, caches := goProject(t, r, r.work)
		before := treeSum(t, caches...)
		code, out := r.cli(180*time.Second, append([]string{"PATH=" + goDir + ":" + agentPath(), "GOTOOLCHAIN=local"}, weaker...),
			"--sandbox-backend", "landlock", "--offline", r.folder(), "-c", "go build -o app . && ./app && go test ./... && echo GO-OK")
		if code != 0 || !strings.Contains(out, "ANSWER 42") || !strings.Contains(out, "GO-OK") {
			t.Errorf("go build / go test in the weaker sandbox, offline, failed (exit %d): %s", code, out)
		}
		if !strings.Contains(out, "WEAKER sandbox") {
			t.Errorf("not the weaker sandbox: %s", out)
		}
		if after := treeSum(t, caches...); after != before {
			t.Errorf("the host's Go caches changed during the sandboxed build")
		}
	})

	t.Run("rename-across-directories", func(t *testing.T) {
		// What rustc does with its metadata (and cargo build needs):
		// rename a file from one directory of the workdir to another.
		// Before, the weaker sandbox's /proc layer voided the policy's
		// REFER right and the rename failed with EXDEV; a link from
		// outside the grants must still fail.
		needs(t, "python3")
		code, out := r.cli(60*time.Second, weaker, "--sandbox-backend", "landlock", r.folder(), "-c",
			`mkdir -p a/b && echo x > a/b/f && python3 -c 'import os; os.rename("a/b/f", "a/f")' && echo RENAMED; ln /etc/hostname hl 2>/dev/null && echo LINKED-OUT; true`)
		if code != 0 || !strings.Contains(out, "RENAMED") || strings.Contains(out, "LINKED-OUT") {
			t.Errorf("rename across directories in the workdir (exit %d): %s", code, out)
		}
	})

	t.Run("cargo", func(t *testing.T) {
		dir := cargoDir(t)
		work := filepath.Join(filepath.Dir(r.work), "cargowork")
		cache := cargoProject(t, r, work, dir)
		before := treeSum(t, cache)
		code, out := r.cli(300*time.Second, append([]string{"PATH=" + dir + ":" + agentPath()}, weaker...),
			"--sandbox-backend", "landlock", "--offline", "--workdir", work, r.folder(), "-c", os.Getenv("CARGO_PROBE")+"cargo build --offline -q && ./target/debug/app")
		if code != 0 || !strings.Contains(out, "CRATE 42") {
			t.Errorf("cargo build in the weaker sandbox, offline, failed (exit %d): %s", code, out)
		}
		if after := treeSum(t, cache); after != before {
			t.Errorf("the host's cargo registry changed during the sandboxed build")
		}
	})

	t.Run("pip", func(t *testing.T) {
		// pip resolves through its index even with a warm cache, so
		// offline it installs from --find-links (README); what the
		// sandbox gives it is a cache it can use, never the host's.
		pip := "/usr/bin/pip3"
		if _, err := os.Stat(pip); err != nil {
			t.Skip("needs /usr/bin/pip3 (Debian's python3-pip)")
		}
		work := filepath.Join(filepath.Dir(r.work), "pipwork")
		wheel := filepath.Join(work, "wheels", "depy-1.0-py3-none-any.whl")
		if err := os.MkdirAll(filepath.Dir(wheel), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(wheel)
		if err != nil {
			t.Fatal(err)
		}
		z := zip.NewWriter(f)
		for name, body := range map[string]string{
			"depy/__init__.py":            "X = 42\n",
			"depy-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: depy\nVersion: 1.0\n",
			"depy-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
			"depy-1.0.dist-info/RECORD":   "depy/__init__.py,,\ndepy-1.0.dist-info/METADATA,,\ndepy-1.0.dist-info/WHEEL,,\ndepy-1.0.dist-info/RECORD,,\n",
		} {
			w, _ := z.Create(name)
			w.Write([]byte(body))
		}
		z.Close()
		f.Close()
		cache := filepath.Join(r.home, ".cache", "pip")
		write(t, filepath.Join(cache, "selfcheck", "state.json"), "{}\n")
		before := treeSum(t, cache)
		code, out := r.cli(120*time.Second, append([]string{"PATH=/usr/bin:/bin:" + agentPath()}, weaker...),
			"--sandbox-backend", "landlock", "--offline", "--workdir", work, r.folder(), "-c",
			`pip3 install -q --no-index --find-links wheels --target site depy && PYTHONPATH=site python3 -c 'import depy; print("PIP", depy.X)'`)
		if code != 0 || !strings.Contains(out, "PIP 42") || strings.Contains(out, "cache has been disabled") {
			t.Errorf("pip install in the weaker sandbox, offline (exit %d), failed or had no cache: %s", code, out)
		}
		if after := treeSum(t, cache); after != before {
			t.Errorf("the host's pip cache changed")
		}
	})

	t.Run("npm", func(t *testing.T) {
		npmDir, cache := npmProject(t, r, filepath.Join(filepath.Dir(r.work), "npmwork"))
		before := treeSum(t, cache)
		code, out := r.cli(180*time.Second, append([]string{"PATH=" + npmDir + ":" + agentPath()}, weaker...),
			"--sandbox-backend", "landlock", "--offline", "--workdir", filepath.Join(filepath.Dir(r.work), "npmwork"), r.folder(), "-c",
			`sh -c 'npm ci' && node -e 'console.log("DEP", require("dep-x"))'`)
		if code != 0 || !strings.Contains(out, "DEP 42") {
			t.Errorf("npm ci in the weaker sandbox, offline, failed (exit %d): %s", code, out)
		}
		if after := treeSum(t, cache); after != before {
			t.Errorf("the host's npm cache changed during the sandboxed npm ci")
		}
	})
}

// cargoDir is the directory of a cargo that runs without rustup (a
// rustup proxy needs RUSTUP_HOME, outside a test's home): rustup's
// toolchain itself, or the system's cargo.
func cargoDir(t *testing.T) string {
	t.Helper()
	c, err := exec.LookPath("cargo")
	if err != nil {
		t.Skip("needs cargo on PATH (apt-get install cargo; .ci/run does)")
	}
	if real, err := filepath.EvalSymlinks(c); err == nil && filepath.Base(real) == "rustup" {
		out, err := exec.Command(real, "which", "cargo").Output()
		if err != nil {
			t.Skipf("needs a cargo outside rustup: rustup which cargo: %v", err)
		}
		return filepath.Dir(strings.TrimSpace(string(out)))
	}
	return filepath.Dir(c)
}

// cargoProject makes a registry "local" of one crate depx (a git index
// and the .crate file, both file:// URLs: no network), a project at work
// that depends on it, and builds the project on the host once, so that
// the host's cargo registry cache holds the index and the crate; the
// project's target directory is removed, so that a build inside must
// compile depx from the cache. It returns the host's registry cache.
func cargoProject(t *testing.T, r *brokerRun, work, dir string) string {
	t.Helper()
	needs(t, "git")
	root := filepath.Join(filepath.Dir(r.home), "registry")
	crate := filepath.Join(root, "depx-1.0.0.crate")
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"depx-1.0.0/Cargo.toml": "[package]\nname = \"depx\"\nversion = \"1.0.0\"\nedition = \"2018\"\n",
		"depx-1.0.0/src/lib.rs": "pub fn answer() -> u32 { 42 }\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	write(t, crate, buf.String())
	sum := sha256.Sum256(buf.Bytes())
	index := filepath.Join(root, "index")
	write(t, filepath.Join(index, "config.json"), fmt.Sprintf(`{"dl": "file://%s/{crate}-{version}.crate", "api": null}`, root))
	write(t, filepath.Join(index, "de", "px", "depx"), fmt.Sprintf(`{"name":"depx","vers":"1.0.0","deps":[],"cksum":"%x","features":{},"yanked":false}`+"\n", sum))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "index"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = index
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	write(t, filepath.Join(work, ".cargo", "config.toml"), fmt.Sprintf("[registries.local]\nindex = \"file://%s\"\n", index))
	write(t, filepath.Join(work, "Cargo.toml"), "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2018\"\n\n[dependencies]\ndepx = { version = \"1.0.0\", registry = \"local\" }\n")
	write(t, filepath.Join(work, "src", "main.rs"), "fn main() { println!(\"CRATE {}\", depx::answer()); }\n")
	cmd := exec.Command(filepath.Join(dir, "cargo"), "build", "-q")
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + r.home, "PATH=" + dir + ":/usr/bin:/bin", "CARGO_NET_GIT_FETCH_WITH_CLI=false"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("host cargo build: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(work, "target")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(r.home, ".cargo", "registry")
}

// npmProject makes a package dep-x, puts it in the host's npm cache (npm
// cache add, no network) and lays out a project at work whose lockfile
// names it by the registry's address and its integrity, as npm install
// writes it; it returns npm's directory and the host's npm cache.
func npmProject(t *testing.T, r *brokerRun, work string) (string, string) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("needs npm on PATH")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("needs node on PATH")
	}
	pkg := filepath.Join(filepath.Dir(r.home), "dep-x")
	write(t, filepath.Join(pkg, "package.json"), `{"name":"dep-x","version":"1.0.0","main":"index.js"}`)
	write(t, filepath.Join(pkg, "index.js"), "module.exports = 42;\n")
	cache := filepath.Join(r.home, ".npm")
	env := []string{"HOME=" + r.home, "PATH=" + filepath.Dir(npm) + ":/usr/bin:/bin", "npm_config_cache=" + cache, "npm_config_update_notifier=false"}
	host := func(dir string, args ...string) {
		cmd := exec.Command(npm, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("host npm %v: %v\n%s", args, err, out)
		}
	}
	host(pkg, "pack")
	tgz := filepath.Join(pkg, "dep-x-1.0.0.tgz")
	host(pkg, "cache", "add", tgz)
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(b)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	write(t, filepath.Join(work, "package.json"), `{"name":"proj","version":"1.0.0","dependencies":{"dep-x":"1.0.0"}}`)
	write(t, filepath.Join(work, "package-lock.json"), fmt.Sprintf(`{"name":"proj","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"proj","version":"1.0.0","dependencies":{"dep-x":"1.0.0"}},"node_modules/dep-x":{"version":"1.0.0","resolved":"https://registry.npmjs.org/dep-x/-/dep-x-1.0.0.tgz","integrity":%q}}}`, integrity))
	return filepath.Dir(npm), cache
}

// TestCachePoisoningAcrossProjects (issue 37, item 3): a module the agent
// poisons in its cache while working on one project (Go does not verify
// a module it extracted before) must not be what the user's other
// project builds with in the agent's next run there. The agent's writable
// cache is per project, in the view, in nono inside the view and in the weaker sandbox. Before, the
// view's layer was per agent: project B printed the poisoned answer.
func TestCachePoisoningAcrossProjects(t *testing.T) {
	skipWithoutLandlock(t)
	for _, engine := range []string{"view", "nono-in-view", "weaker"} {
		t.Run(engine, func(t *testing.T) {
			r := newBrokerRun(t)
			env := []string{"GOTOOLCHAIN=local"}
			backend := []string{"--sandbox-backend", "landlock"}
			path := agentPath()
			switch engine {
			case "weaker":
				r.prefix = noUserns(t)
				env = append(env, "AGENT_SANDBOX_WEAKER_SANDBOX=1")
			case "nono-in-view":
				// The default posture with nono on PATH: the folder's
				// nono.json chooses nono, inside the view.
				backend = nil
				path = strings.TrimPrefix(nonoDefaultEnv(t)[0], "PATH=")
			}
			other := filepath.Join(filepath.Dir(r.work), "other")
			goDir, caches := goProject(t, r, r.work)
			goProject(t, r, other)
			env = append(env, "PATH="+goDir+":"+path)
			before := treeSum(t, caches...)
			// In project A the agent rewrites the dependency in its module
			// cache: the attack works there (the control).
			poison := `set -e; go build -o /dev/null . ; d=$(go env GOMODCACHE)/example.com/dep@v1.0.0; chmod -R u+w "$d"; sed -i 's/return 42/return 666/' "$d/dep.go"; go run .; sed 's/^/PARENT=/' /proc/$PPID/comm 2>/dev/null || true`
			code, out := r.cli(180*time.Second, env, append(backend, "--offline", r.folder(), "-c", poison)...)
			if code != 0 || !strings.Contains(out, "ANSWER 666") {
				t.Fatalf("control: the agent could not poison its own cache in project A (exit %d): %s", code, out)
			}
			if engine == "nono-in-view" && !strings.Contains(out, "PARENT=nono\n") {
				t.Errorf("the agent's parent is not nono: not nono inside the view: %s", out)
			}
			// In project B the same agent's next run builds the real
			// dependency.
			code, out = r.cli(180*time.Second, env, append(backend, "--offline", "--workdir", other, r.folder(), "-c", "go run .")...)
			if code != 0 || !strings.Contains(out, "ANSWER 42") {
				t.Errorf("project B's run (exit %d) did not build the real dependency: %s", code, out)
			}
			if strings.Contains(out, "ANSWER 666") {
				t.Errorf("the module poisoned in project A followed the agent into project B: %s", out)
			}
			if after := treeSum(t, caches...); after != before {
				t.Errorf("the host's Go caches changed")
			}
		})
	}
}
