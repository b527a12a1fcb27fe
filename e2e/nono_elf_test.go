package e2e

// nono's ELF dependency resolution on Nix-like trees (nolabs-ai/nono#1649
// and #1724, fixed by PR #1650, commit 4d688bfd; issue 25 item 4),
// reproduced with real nono builds: a program whose ELF interpreter and
// libraries live in a /nix/store-like tree, with a library that needs a
// library found only beside the interpreter (on NixOS: libgcc_s.so.1 needs
// libc.so.6, which lies in the glibc store path next to ld-linux), fails to
// start under a stock nono's command_policies and runs under a nono with
// the fix.
//
// The nono without the fix is $AGENT_SANDBOX_E2E_NONO_UNFIXED (.ci/run
// builds nono-cli 0.77.0, the last release without it); the one with it is
// the nono under test ($AGENT_SANDBOX_E2E_NONO, 0.78.0). The test also holds
// nix/nono.nix to the same fact: its fixedIn lies above the unfixed
// version and at or below the fixed one.
//
// The tree: <store>/<h>-glibc/lib holds a copy of this system's loader and
// libc and libnixonly.so.1 (standing in for the libc.so.6 that only the
// loader's directory has on NixOS: no system directory has
// libnixonly.so.1, while every Debian has a libc.so.6 there, which would
// hide the bug); <store>/<h>-liba/lib/libA.so needs libnixonly.so.1 and has
// no RPATH or RUNPATH (as libgcc_s.so.1); <store>/<h>-prog/bin/prog runs
// with that loader and needs libA.so. At run time the loader finds
// libnixonly.so.1 through prog's DT_RPATH, which ld.so applies to the
// libraries prog loads (on NixOS it is the loader's built-in default path);
// nono's resolver, before the fix, searched only libA.so's own RPATH and
// RUNPATH and the system directories, failed, and left prog out of the
// command_policies exec gate, so exec fails with EACCES.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/pathresolve"
)

// nonoUnfixedEnv names the variable holding a nono without the fix; by
// default the one .ci/run builds, /opt/nono-<nonoUnfixedVersion>.
const nonoUnfixedEnv = "AGENT_SANDBOX_E2E_NONO_UNFIXED"

// nonoUnfixedVersion is the last nono-cli release without the fix.
const nonoUnfixedVersion = "0.77.0"

// nixLikeTree builds the tree described above under root and returns
// prog's bin directory. With libaRunpath, libA.so names the loader's
// directory in its own RUNPATH, where any resolver finds libnixonly.so.1
// (the control that the bug is the resolution).
func nixLikeTree(t *testing.T, root string, libaRunpath bool) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("needs a C compiler: apt-get install gcc libc6-dev (.ci/run does)")
	}
	res, err := pathresolve.Resolve("/bin/sh", pathresolve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ld, libc string
	for _, f := range res.Files {
		switch b := filepath.Base(f); {
		case strings.HasPrefix(b, "ld-linux"):
			ld = f
		case b == "libc.so.6":
			libc = f
		}
	}
	if ld == "" || libc == "" {
		t.Fatalf("cannot find the loader and libc of /bin/sh in %q", res.Files)
	}
	store := filepath.Join(root, "nix", "store")
	glibc := filepath.Join(store, "0000000000000000000000000000000a-glibc-2.40", "lib")
	liba := filepath.Join(store, "0000000000000000000000000000000b-liba-1.0", "lib")
	bin := filepath.Join(store, "0000000000000000000000000000000c-prog-1.0", "bin")
	for _, d := range []string{glibc, liba, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for from, to := range map[string]string{ld: filepath.Join(glibc, filepath.Base(ld)), libc: filepath.Join(glibc, "libc.so.6")} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	compile := func(src string, args ...string) {
		t.Helper()
		f := filepath.Join(root, "src.c")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, append([]string{f}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	nixonly := filepath.Join(glibc, "libnixonly.so.1")
	compile(`int nixonly(void) { return 7; }`, "-shared", "-fPIC", "-Wl,-soname,libnixonly.so.1", "-o", nixonly)
	libaArgs := []string{"-shared", "-fPIC", "-Wl,-soname,libA.so,--no-as-needed", "-o", filepath.Join(liba, "libA.so"), nixonly}
	if libaRunpath {
		libaArgs = append(libaArgs, "-Wl,--enable-new-dtags,-rpath,"+glibc)
	}
	compile(`int nixonly(void); int a(void) { return nixonly(); }`, libaArgs...)
	compile(`#include <stdio.h>
int a(void);
int main(void) { printf("elf-ok %d\n", a()); return 0; }`,
		"-o", filepath.Join(bin, "prog"), filepath.Join(liba, "libA.so"),
		"-Wl,--disable-new-dtags,-rpath,"+liba+":"+glibc, "-Wl,--dynamic-linker="+filepath.Join(glibc, filepath.Base(ld)))
	os.Remove(filepath.Join(root, "src.c"))
	return bin
}

// copyExecutable copies the program from (after symlinks) to to, mode 0755.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// commandPoliciesProfile is nono's own test profile for command_policies
// (crates/nono-cli/tests/execution_strategy_run.rs,
// command_policies_profile): the workspace, the store read-only, no
// network, and one command policy, which turns on the outer exec gate.
func commandPoliciesProfile(work, store string, policies bool) string {
	p := `{
  "meta": {"name": "agent-sandbox-elf-test"},
  "filesystem": {"allow": ["` + work + `"], "read": ["` + store + `"]},
  "network": {"block": true}`
	if policies {
		p += `,
  "command_policies": {"commands": {"cat": {"executable": "/bin/cat"}}}`
	}
	return p + "\n}\n"
}

// TestNonoELFResolution: prog runs on the host and under both nonos
// without command_policies (control); with command_policies the nono
// without the fix refuses to execute it and the nono with the fix runs it;
// and agent-sandbox, which grants the closure pathresolve finds (the
// loader's directory included) and does not use command_policies, runs it
// under both.
func TestNonoELFResolution(t *testing.T) {
	fixed := skipWithoutNono(t)
	unfixed := os.Getenv(nonoUnfixedEnv)
	if unfixed == "" {
		unfixed = nonoBuilt(nonoUnfixedVersion)
	}
	if unfixed == "" {
		if _, err := exec.LookPath("cargo"); err == nil {
			t.Fatalf("%s is not set, but cargo is installed, so a nono without the fix can be built here: cargo install --locked nono-cli@%s --root /opt/nono-%s (.ci/run does), or set %s", nonoUnfixedEnv, nonoUnfixedVersion, nonoUnfixedVersion, nonoUnfixedEnv)
		}
		t.Skipf("%s is not set and /opt/nono-%s does not exist: this test needs a nono without the ELF resolution fix (.ci/run builds nono-cli %s)", nonoUnfixedEnv, nonoUnfixedVersion, nonoUnfixedVersion)
	}
	if fi, err := os.Stat(unfixed); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", nonoUnfixedEnv, unfixed, err)
	}
	bin := buildAgentSandbox(t)
	fixedV, unfixedV := nonoVersionOf(t, fixed), nonoVersionOf(t, unfixed)
	t.Logf("without the fix: %s (nono %s); with it: %s (nono %s)", unfixed, unfixedV, fixed, fixedV)

	// nix/nono.nix's guard must match the measured fact.
	if b, err := os.ReadFile(filepath.Join("..", "nix", "nono.nix")); err == nil {
		m := regexp.MustCompile(`fixedIn = "([0-9.]+)";`).FindSubmatch(b)
		if m == nil {
			t.Errorf("nix/nono.nix names no fixedIn")
		} else if fixedIn := string(m[1]); !(versionLess(unfixedV, fixedIn) && !versionLess(fixedV, fixedIn)) {
			t.Errorf("nix/nono.nix says the fix first came in %s, but nono %s lacks it and nono %s has it (measured below): update fixedIn", fixedIn, unfixedV, fixedV)
		}
	}

	newRoot := func() string {
		root, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		return root
	}
	root := newRoot()
	progDir := nixLikeTree(t, root, false)
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(root, "nix", "store")
	// PATH names only the program's directory and one holding a copy of
	// the system shell (in the store, which the profile grants): nono's exec gate resolves the closure of every executable
	// in the PATH directories when it starts (all of /usr/bin took
	// seconds, and once, under load, more than ten minutes), and nono
	// 0.77.0 admits to it only what lies in those directories.
	shDir := filepath.Join(store, "0000000000000000000000000000000d-sh", "bin")
	copyExecutable(t, "/bin/sh", filepath.Join(shDir, "sh"))
	sh := filepath.Join(shDir, "sh")
	path := progDir + ":" + shDir
	// The control tree: the same, but libA.so's RUNPATH names the
	// loader's directory.
	croot := newRoot()
	cprogDir := nixLikeTree(t, croot, true)

	// Control: the program runs on the host.
	host := exec.Command(filepath.Join(progDir, "prog"))
	if out, err := host.CombinedOutput(); err != nil || !strings.Contains(string(out), "elf-ok 7") {
		t.Fatalf("control: the program does not run on the host: %v: %s", err, out)
	}

	runIn := func(store, path, nono string, policies bool, argv ...string) (int, string) {
		t.Helper()
		profile := filepath.Join(root, "profile.json")
		if err := os.WriteFile(profile, []byte(commandPoliciesProfile(work, store, policies)), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, nono, append([]string{"-s", "run", "--profile", profile, "--allow-cwd", "--"}, argv...)...)
		cmd.Dir = work
		cmd.WaitDelay = 5 * time.Second
		cmd.Env = []string{"HOME=" + home, "PATH=" + path, "LANG=C.UTF-8", "NONO_NO_UPDATE_CHECK=1"}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("nono %s did not finish in 2 minutes (killed): %s", strings.Join(argv, " "), out.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}
	runNono := func(nono string, policies bool, argv ...string) (int, string) {
		t.Helper()
		return runIn(store, path, nono, policies, argv...)
	}
	t.Run("control: nono without the fix "+unfixedV+" under command_policies, libA.so's RUNPATH naming the loader's directory", func(t *testing.T) {
		cshDir := filepath.Join(croot, "nix", "store", "0000000000000000000000000000000d-sh", "bin")
		copyExecutable(t, "/bin/sh", filepath.Join(cshDir, "sh"))
		if code, out := runIn(filepath.Join(croot, "nix", "store"), cprogDir+":"+cshDir, unfixed, true, filepath.Join(cshDir, "sh"), "-c", "prog"); code != 0 || !strings.Contains(out, "elf-ok 7") {
			t.Errorf("exit %d (so the failure below is not the resolution alone): %s", code, out)
		}
	})

	for _, n := range []struct{ name, nono string }{{"without the fix " + unfixedV, unfixed}, {"with the fix " + fixedV, fixed}} {
		t.Run("control: nono "+n.name+" without command_policies", func(t *testing.T) {
			if code, out := runNono(n.nono, false, sh, "-c", "prog"); code != 0 || !strings.Contains(out, "elf-ok 7") {
				t.Errorf("exit %d: %s", code, out)
			}
		})
	}
	for _, argv := range [][]string{{sh, "-c", "prog"}, {filepath.Join(progDir, "prog")}} {
		how := "started by a shell"
		if len(argv) == 1 {
			how = "as the command"
		}
		t.Run("command_policies, nono without the fix "+unfixedV+", "+how, func(t *testing.T) {
			code, out := runNono(unfixed, true, argv...)
			if code == 0 || strings.Contains(out, "elf-ok") {
				t.Errorf("nono %s ran the program under command_policies (exit %d), so this tree does not reproduce nolabs-ai/nono#1649: %s", unfixedV, code, out)
			}
			t.Logf("nono %s: exit %d: %s", unfixedV, code, strings.TrimSpace(out))
		})
		t.Run("command_policies, nono with the fix "+fixedV+", "+how, func(t *testing.T) {
			if code, out := runNono(fixed, true, argv...); code != 0 || !strings.Contains(out, "elf-ok 7") {
				t.Errorf("nono %s did not run the program under command_policies (exit %d): %s", fixedV, code, out)
			}
		})
	}

	// agent-sandbox grants the program's closure itself, so both nonos
	// run it (agent-sandbox does not use command_policies).
	folder := filepath.Join(root, "agents", "prog")
	write(t, filepath.Join(folder, "agent.toml"), "command = \""+filepath.Join(progDir, "prog")+"\"\n")
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{\"network\": {\"block\": true}}\n")
	for _, n := range []struct{ name, nono string }{{unfixedV, unfixed}, {fixedV, fixed}} {
		t.Run("agent-sandbox under nono "+n.name, func(t *testing.T) {
			cmd := exec.Command(bin, "--sandbox-backend", "nono", folder)
			cmd.Dir = work
			cmd.Env = withCover([]string{"HOME=" + home, "PATH=" + filepath.Dir(n.nono) + ":" + agentPath(), "LANG=C.UTF-8"})
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "elf-ok 7") {
				t.Errorf("%v: %s", err, out)
			}
		})
	}
}

// versionLess compares dotted versions numerically ("0.77.0" < "0.78.0").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x = atoiOr0(as[i])
		}
		if i < len(bs) {
			y = atoiOr0(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func atoiOr0(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
