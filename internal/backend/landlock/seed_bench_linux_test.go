//go:build linux

package landlock

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// makeCache writes files files of size bytes each, 50 to a directory,
// below dir: a stand-in for a toolchain's cache (Go's build cache holds
// many small files in 256 directories).
func makeCache(tb testing.TB, dir string, files, size int) {
	tb.Helper()
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	for i := 0; i < files; i++ {
		d := filepath.Join(dir, fmt.Sprintf("%02x", i/50))
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		buf[0] = byte(i)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d-d", i)), buf, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSeedCache measures the weaker sandbox's cache seeding: a first
// run in a project copies the whole cache ("first"); every later run
// only compares each file's size and modification time ("up-to-date"),
// and copies what the host added since ("one-new").
func BenchmarkSeedCache(b *testing.B) {
	for _, c := range []struct{ files, size int }{{1000, 4 << 10}, {1000, 64 << 10}, {10000, 4 << 10}} {
		src := b.TempDir()
		makeCache(b, src, c.files, c.size)
		name := fmt.Sprintf("%dx%dKiB", c.files, c.size>>10)
		b.Run(name+"/first", func(b *testing.B) {
			b.SetBytes(int64(c.files * c.size))
			for i := 0; i < b.N; i++ {
				dst := filepath.Join(b.TempDir(), "copy")
				if _, err := seedCache(src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		dst := filepath.Join(b.TempDir(), "copy")
		if _, err := seedCache(src, dst); err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/up-to-date", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				st, err := seedCache(src, dst)
				if err != nil || st.Files != 0 {
					b.Fatalf("%+v %v", st, err)
				}
			}
		})
	}
}
