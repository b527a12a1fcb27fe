package pathresolve

import "testing"

// Each iteration is a fresh Resolve call: nothing is cached across calls,
// so this is the cold in-process cost (the OS page cache is warm).
func benchResolve(b *testing.B, command string) {
	if _, err := Resolve(command, Options{PATH: testPATH}); err != nil {
		b.Skipf("%s: %v", command, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(command, Options{PATH: testPATH}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolveNode(b *testing.B)    { benchResolve(b, "node") }
func BenchmarkResolveSh(b *testing.B)      { benchResolve(b, "sh") }
func BenchmarkResolvePython3(b *testing.B) { benchResolve(b, "python3") }
