//go:build linux

package landlock

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	ll "github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// viewEngine says whether runs use the namespace view (package view). It
// is opt-in (AGENT_SANDBOX_ENGINE=view) until the view carries every rule
// of the Landlock-only start; see docs/ARCHITECTURE.md.
func viewEngine() bool { return os.Getenv("AGENT_SANDBOX_ENGINE") == "view" }

// viewConfig turns the Landlock policy p into a namespace view holding
// exactly p's paths, with the same ruleset enforced inside it.
func viewConfig(p ll.Policy, argv, env []string, workdir string) view.Config {
	c := view.Config{Workdir: workdir, Argv: argv, Env: env, Network: view.NetHost}
	if p.Network == ll.NetBlocked {
		c.Network = view.NetLoopback
	}
	kind := map[string]view.Kind{}
	var order []string
	add := func(path string, k view.Kind) {
		if path == "/proc" || strings.HasPrefix(path, "/proc/") || path == "/" {
			return
		}
		if old, ok := kind[path]; ok {
			if old == view.ReadOnly && k == view.ReadWrite {
				kind[path] = k
			}
			return
		}
		kind[path] = k
		order = append(order, path)
	}
	for _, path := range append(append([]string{}, p.ReadExec...), p.ReadOnly...) {
		add(path, view.ReadOnly)
	}
	for _, path := range append(append([]string{}, p.ReadWrite...), p.WriteOnly...) {
		add(path, view.ReadWrite)
	}
	for _, path := range order {
		m := view.Mount{Kind: kind[path], Path: filepath.Clean(path), Optional: true}
		if target, err := os.Readlink(path); err == nil && filepath.Dir(path) == "/" {
			m = view.Mount{Kind: view.Symlink, Path: path, Target: target}
		} else if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
			// The view mirrors the host's layout: a path reached through
			// a symlink is placed where the link leads, and the link
			// itself is in the view (as a root entry or inside a bind).
			m.Path = real
		}
		c.Mounts = append(c.Mounts, m)
	}
	c.Mounts = append(c.Mounts,
		view.Mount{Kind: view.Tmpfs, Path: "/tmp"},
		view.Mount{Kind: view.Tmpfs, Path: "/dev/shm"},
		view.Mount{Kind: view.Dir, Path: "/dev"},
		view.Mount{Kind: view.Proc, Path: "/proc"},
		view.Mount{Kind: view.Mask, Path: "/proc/sysrq-trigger"},
	)
	lp := p
	lp.Network = ll.NetOpen
	lp.AllowTCPConnect = nil
	lp.ReadWrite = append(append([]string{}, p.ReadWrite...), "/tmp", "/dev/shm")
	c.Landlock = lp
	c.Seccomp = ll.Seccomp{DenyKeyrings: true}
	return c
}

// startInView is a launch.Starter for the namespace view.
func startInView(p ll.Policy, stderr io.Writer) func(cmd *exec.Cmd) (func() error, error) {
	return func(cmd *exec.Cmd) (func() error, error) {
		argv := append([]string{cmd.Path}, cmd.Args[1:]...)
		c := viewConfig(p, argv, cmd.Env, cmd.Dir)
		proc, err := view.Start(cmd, c)
		if err != nil {
			return nil, err
		}
		return func() error {
			err := proc.Wait()
			var se *view.SetupError
			if errors.As(err, &se) {
				diag.Errorf(stderr, "%s", se.Msg)
			}
			return err
		}, nil
	}
}
