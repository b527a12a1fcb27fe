//go:build linux

package landlock

import (
	"os/exec"
	"testing"
)

// BenchmarkStartTrue starts and waits for a confined /bin/true (open
// network, then a private network namespace). Compare with
// BenchmarkBareTrue.
func BenchmarkStartTrue(b *testing.B) {
	for _, mode := range []string{"open", "netns"} {
		b.Run(mode, func(b *testing.B) {
			p := systemPolicy(b)
			k := testKernel(b, "host")
			if mode == "netns" {
				k = testKernel(b, "netns")
				p.Network = NetBlocked
			}
			for b.Loop() {
				proc, err := start(exec.Command("/bin/true"), p, Seccomp{}, k)
				if err != nil {
					b.Fatal(err)
				}
				if err := proc.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBareTrue runs /bin/true without a sandbox.
func BenchmarkBareTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
