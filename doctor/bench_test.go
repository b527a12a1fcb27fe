package doctor

import (
	"path/filepath"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/pathresolve"
)

const benchPATH = "/usr/local/bin:/usr/bin:/bin"

// benchOptions checks the built-in agents only: a fresh empty home, no
// AGENT_SANDBOX_PATH and a system agent directory that does not exist.
func benchOptions(b *testing.B, foldersOnly bool) Options {
	home := b.TempDir()
	env := map[string]string{"HOME": home, "PATH": benchPATH, "SHELL": "/bin/sh"}
	return Options{
		FoldersOnly: foldersOnly,
		Getenv:      func(k string) string { return env[k] },
		SystemDir:   filepath.Join(home, "no-system-agents"),
		Workdir:     home,
	}
}

// BenchmarkResolveNodeCold resolves node with a fresh pathresolve.Resolve
// call per iteration (nothing is cached across calls; the OS page cache is
// warm).
func BenchmarkResolveNodeCold(b *testing.B) {
	if _, err := pathresolve.Resolve("node", pathresolve.Options{PATH: benchPATH}); err != nil {
		b.Skipf("node: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pathresolve.Resolve("node", pathresolve.Options{PATH: benchPATH}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoctorFoldersOnly is `agent-sandbox doctor --folders-only` over
// the six built-in agents.
func BenchmarkDoctorFoldersOnly(b *testing.B) {
	o := benchOptions(b, true)
	b.ReportAllocs()
	for b.Loop() {
		if rs := Run(o); Failed(rs) {
			b.Fatalf("%+v", rs)
		}
	}
}

// BenchmarkDoctorFull is `agent-sandbox doctor` over the built-in agents,
// host checks and launcher check included. The user-namespace probe (a
// child process) is cached per process by internal/landlock, so only the
// first iteration pays for it; nono and sbx are probed when on PATH.
func BenchmarkDoctorFull(b *testing.B) {
	o := benchOptions(b, false)
	b.ReportAllocs()
	for b.Loop() {
		Run(o)
	}
}
