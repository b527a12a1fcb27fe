//go:build linux

package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchTree makes a repository-like tree of n files (about 1 KiB each,
// 100 per directory) with a git repository of it when git is installed.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	content := make([]byte, 1536)
	for i := range content {
		content[i] = byte('a' + i%26)
	}
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("pkg%03d/sub%02d", i/1000, (i/100)%10))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		copy(content, fmt.Sprintf("// file %08d\n", i))
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.go", i)), content[:512+i%1024], 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func gitIn(b *testing.B, dir string, args ...string) {
	b.Helper()
	// No automatic gc: a detached one would outlive the benchmark.
	cmd := exec.Command("git", append([]string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v: %s", args, err, out)
	}
}

// touch10 rewrites 10 files of the tree with new content.
func touch10(b *testing.B, dir string, round int) {
	b.Helper()
	for i := 0; i < 10; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d/sub%02d/f%d.go", 0, 0, i))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("round %d file %d\n", round, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuClock is the CPU time (user and system) of this process, or of its
// waited-for children: on a loaded machine it swings less than the wall
// clock.
func cpuClock(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMetric reports the CPU time per operation since start.
func cpuMetric(b *testing.B, who int, start time.Duration) {
	b.ReportMetric(float64(cpuClock(who)-start)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkCheckpoint measures a workdir's first checkpoint (every byte
// read and stored), a later one with 10 changed files, one of an
// unchanged tree (a stat walk), and `git status` on the same tree, for
// 10,000 and 100,000 files, each in wall time and CPU time;
// docs/benchmarks.md has the table.
func BenchmarkCheckpoint(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := benchTree(b, n)
			b.Run("first", func(b *testing.B) {
				var size int64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					root := b.TempDir()
					s, err := Open(root, dir, Settings{})
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := s.Take(nil); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					size = s.size()
					b.StartTimer()
				}
				b.ReportMetric(float64(size)/(1<<20), "store-MiB")
			})
			root := b.TempDir()
			s, err := Open(root, dir, Settings{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Take(nil); err != nil {
				b.Fatal(err)
			}
			b.Run("changed10", func(b *testing.B) {
				var cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					touch10(b, dir, i)
					c := cpuClock(syscall.RUSAGE_SELF)
					b.StartTimer()
					if _, err := s.Take(nil); err != nil {
						b.Fatal(err)
					}
					cpu += cpuClock(syscall.RUSAGE_SELF) - c
				}
				b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
			})
			b.Run("unchanged", func(b *testing.B) {
				if _, err := s.Take(nil); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				c := cpuClock(syscall.RUSAGE_SELF)
				for i := 0; i < b.N; i++ {
					if _, err := s.Take(nil); err != nil {
						b.Fatal(err)
					}
				}
				cpuMetric(b, syscall.RUSAGE_SELF, c)
			})
			b.Run("git-status", func(b *testing.B) {
				if _, err := exec.LookPath("git"); err != nil {
					b.Skip("needs git, for the comparison")
				}
				gitIn(b, dir, "init", "-q")
				gitIn(b, dir, "add", "-A")
				gitIn(b, dir, "-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm", "b")
				gitIn(b, dir, "status", "--porcelain")
				b.ResetTimer()
				var cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					touch10(b, dir, i+1000)
					c := cpuClock(syscall.RUSAGE_CHILDREN)
					b.StartTimer()
					gitIn(b, dir, "status", "--porcelain")
					cpu += cpuClock(syscall.RUSAGE_CHILDREN) - c
				}
				b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
			})
		})
	}
}
