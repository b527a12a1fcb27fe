package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/scope"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agent-sandbox": func() {
			os.Exit(Main(os.Args[1:], launch.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
		},
	})
}

// TestScripts runs the CLI behaviour scripts in testdata/*.txt. Each script
// gets a throwaway HOME ($WORK/home) and no XDG or AGENT_SANDBOX variables.
// $SYSPATH is a PATH with only the system directories (no nono, no sbx), so
// scripts can pin the "nono not installed" case; $STANDIN holds stand-ins
// for external CLIs that cannot run on these machines (named as such; a
// dry-run never executes them).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		// [userscope]: this host's systemd user manager can bound a
		// run's memory (scope.Find), which decides memory_max's outcome.
		// [delegated]: this process's cgroup lies under its user manager,
		// where nono's --memory can make its own (scope.Delegated).
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "userscope":
				_, err := scope.Find()
				return err == nil, nil
			case "delegated":
				return scope.Delegated() == nil, nil
			case "nonoview":
				// A nono run here is nono inside the namespace view;
				// elsewhere (no user namespaces, not Linux) nono alone.
				ok, _ := view.Expected()
				return runtime.GOOS == "linux" && ok, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exits CODE PROG ARGS...: run PROG and require exit status CODE
			// (stdout and stderr are kept for the next stdout/stderr checks).
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits CODE program [args...]")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("%v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
		},
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			for _, k := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "AGENT_SANDBOX_PATH", "NO_COLOR"} {
				env.Setenv(k, "")
			}
			env.Setenv("SHELL", "/bin/sh")
			bin := filepath.Join(env.WorkDir, ".bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				return err
			}
			// testscript puts the agent-sandbox command in a directory on
			// PATH; SYSPATH keeps it and drops everything else.
			for _, dir := range filepath.SplitList(env.Getenv("PATH")) {
				if _, err := os.Stat(filepath.Join(dir, "agent-sandbox")); err == nil {
					env.Setenv("SYSPATH", dir+":/usr/bin:/bin")
					break
				}
			}
			standin := filepath.Join(env.WorkDir, ".standin")
			if err := os.MkdirAll(standin, 0o755); err != nil {
				return err
			}
			for _, name := range []string{"nono", "sbx"} {
				script := "#!/bin/sh\necho 'stand-in for " + name + " (the real CLI cannot run on this machine): it must never be executed by these tests' >&2\nexit 99\n"
				if err := os.WriteFile(filepath.Join(standin, name), []byte(script), 0o755); err != nil {
					return err
				}
			}
			env.Setenv("STANDIN", standin)
			// $STANDIN_NONO holds only the nono stand-in, for commands that
			// would query sbx when it is on PATH (agents lists sandboxes).
			nonoOnly := filepath.Join(env.WorkDir, ".standin-nono")
			if err := os.MkdirAll(nonoOnly, 0o755); err != nil {
				return err
			}
			if err := os.Symlink(filepath.Join(standin, "nono"), filepath.Join(nonoOnly, "nono")); err != nil {
				return err
			}
			env.Setenv("STANDIN_NONO", nonoOnly)
			return nil
		},
	})
}
