package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// launcherRun runs only the launcher check, with agent-sandbox at exe.
func launcherRun(t *testing.T, f *fixture, workdir, exe string, look map[string]string) []Result {
	t.Helper()
	o := f.options(false)
	o.Workdir = workdir
	o.LookPath = lookPathOnly(look)
	o.executable = func() (string, error) { return exe, nil }
	r := newRun(o)
	if !r.setHome() {
		t.Fatalf("%+v", r.results)
	}
	r.launcher(r.targets())
	for _, res := range r.results {
		wellFormed(t, res)
	}
	return r.results
}

func TestLauncher(t *testing.T) {
	f := newFixture(t, "tools", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\nconfig_paths = [\"~/.tools\"]\n",
		"sandbox/nono.json": "{\"filesystem\": {\"write\": [\"~/out\"]}}",
	})
	project := filepath.Join(filepath.Dir(f.home), "project")
	writeFile(t, filepath.Join(project, "bin", "agent-sandbox"), "", 0o755)
	writeFile(t, filepath.Join(f.home, ".tools", "agent-sandbox"), "", 0o755)
	writeFile(t, filepath.Join(f.home, "out", "agent-sandbox"), "", 0o755)
	elsewhere := filepath.Join(filepath.Dir(f.home), "opt", "agent-sandbox")
	writeFile(t, elsewhere, "", 0o755)

	// Built inside the project a run from there grants read-write.
	rs := launcherRun(t, f, project, filepath.Join(project, "bin", "agent-sandbox"), nil)
	only(t, rs, "workdir", OK, project+": runs started here get it read-write")
	only(t, rs, "launcher agent-sandbox", Fail, "agent-sandbox "+project+"/bin/agent-sandbox lies inside the working directory "+project+" (read-write in every run started there): a sandboxed agent could replace")

	// Inside config_paths.
	rs = launcherRun(t, f, project, filepath.Join(f.home, ".tools", "agent-sandbox"), nil)
	only(t, rs, "launcher agent-sandbox", Fail, filepath.Join(f.folder, "agent.toml")+`: config_paths[0] = "~/.tools", which agent tools can write`)

	// Inside a write-only grant of nono.json.
	rs = launcherRun(t, f, project, filepath.Join(f.home, "out", "agent-sandbox"), nil)
	only(t, rs, "launcher agent-sandbox", Fail, filepath.Join(f.folder, "sandbox/nono.json")+`: filesystem.write[0] = "~/out"`)

	// A symlink on PATH inside a grant, to a binary outside: replacing the
	// link replaces the program.
	link := filepath.Join(project, "nono")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	rs = launcherRun(t, f, project, elsewhere, map[string]string{"nono": link})
	only(t, rs, "launcher nono", Fail, "nono "+link+" lies inside the working directory")

	// Outside every grant.
	rs = launcherRun(t, f, project, elsewhere, nil)
	only(t, rs, "launcher agent-sandbox", OK, elsewhere+" is outside every path the 1 checked agent(s) can write")
	none(t, rs, "launcher nono")
}

// A working directory where runs are refused ($HOME) is not counted.
func TestLauncherRefusedWorkdir(t *testing.T) {
	f := newFixture(t, "tools", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	exe := filepath.Join(f.home, "bin", "agent-sandbox")
	writeFile(t, exe, "", 0o755)
	rs := launcherRun(t, f, f.home, exe, nil)
	only(t, rs, "workdir", OK, "a run started here is refused")
	only(t, rs, "launcher agent-sandbox", OK, exe+" is outside")
}

// With nono installed, nono's default profile shares the temp directory.
func TestLauncherNonoTemp(t *testing.T) {
	f := newFixture(t, "tools", map[string]string{"agent.toml": "command = \"/bin/sh\"\n"})
	tmp, err := os.MkdirTemp("", "doctor-launcher-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, "agent-sandbox")
	writeFile(t, exe, "", 0o755)
	nono := fakeProgram(t, "nono", "exit 99\n")
	rs := launcherRun(t, f, f.home, exe, map[string]string{"nono": nono})
	only(t, rs, "launcher agent-sandbox", Fail, "(nono's default profile grants it read-write to every agent")
}

// TestPlantedProgramNotExecuted (issue 10 item 8): a nono or sbx found
// inside a path a sandboxed agent can write (the working directory, an
// agent's config_paths) fails the check and is never executed; the same
// programs outside every grant are probed.
func TestPlantedProgramNotExecuted(t *testing.T) {
	f := newFixture(t, "tools", map[string]string{
		"agent.toml":        "command = \"/bin/sh\"\nconfig_paths = [\"~/.tools\"]\n",
		"sandbox/nono.json": "{}",
	})
	project := filepath.Join(filepath.Dir(f.home), "project")
	canary := filepath.Join(filepath.Dir(f.home), "ran")
	script := "#!/bin/sh\ntouch " + canary + "\necho nono 0.74.0\n"
	venvNono := filepath.Join(project, ".venv", "bin", "nono")
	toolsSbx := filepath.Join(f.home, ".tools", "sbx")
	writeFile(t, venvNono, script, 0o755)
	writeFile(t, toolsSbx, script, 0o755)
	o := f.options(false)
	o.Workdir = project
	o.LookPath = lookPathOnly(map[string]string{"nono": venvNono, "sbx": toolsSbx})
	o.executable = func() (string, error) { return "/usr/bin/true", nil }
	rs := Run(o)
	if _, err := os.Stat(canary); err == nil {
		t.Fatalf("doctor executed a program inside a writable grant: %+v", rs)
	}
	only(t, rs, "nono", Fail, "nono "+venvNono+" lies inside the working directory "+project)
	only(t, rs, "sbx", Fail, `config_paths[0] = "~/.tools", which agent tools can write`)
	if got := ProgramInsideWritable(o, "nono", venvNono); !strings.Contains(got, venvNono) {
		t.Errorf("ProgramInsideWritable = %q", got)
	}

	// Neighbour: the same program outside every grant is probed (as sbx:
	// with nono installed, the temp directory this test lives in counts
	// as writable).
	outside := filepath.Join(filepath.Dir(f.home), "opt", "sbx")
	writeFile(t, outside, script, 0o755)
	o.LookPath = lookPathOnly(map[string]string{"sbx": outside})
	rs = Run(o)
	only(t, rs, "sbx", OK, "installed: "+outside)
	if _, err := os.Stat(canary); err != nil {
		t.Errorf("the sbx outside every grant was not probed: %+v", rs)
	}
	if got := ProgramInsideWritable(o, "sbx", outside); got != "" {
		t.Errorf("ProgramInsideWritable(outside) = %q", got)
	}
}
