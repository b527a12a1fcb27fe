package landlock

import "testing"

// BenchmarkRootOnly measures the walk of /etc a root caller's launch
// makes (rootOnly).
func BenchmarkRootOnly(b *testing.B) {
	for b.Loop() {
		rootOnly("/etc", etcSecrets)
	}
}
