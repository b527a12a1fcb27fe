//go:build linux

package landlock

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// descriptorRights gives a stream's file the rights of the descriptor's
// access mode only (issue 39, item 3): a write-only log never the right to
// read it, a read-only input never the right to write it; a directory or
// an O_PATH descriptor nothing. An anonymous pipe's rule, which Landlock
// refuses (no path), is skipped.
func TestDescriptorRights(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	all := handledFS(MaxKnownABI)
	open := func(flags int) int {
		fd, err := unix.Open(file, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(null)
	for _, tc := range []struct {
		name string
		fd   int
		want uint64
	}{
		{"write-only file", open(unix.O_WRONLY | unix.O_APPEND), fsWriteFile | fsTruncate},
		{"read-only file", open(unix.O_RDONLY), fsReadFile},
		{"read-write file", open(unix.O_RDWR), fsReadFile | fsWriteFile | fsTruncate},
		{"O_PATH", open(unix.O_PATH), 0},
		{"directory", dfd, 0},
		{"pipe (a FIFO: its rule is refused, and skipped, below)", int(w.Fd()), fsWriteFile | fsTruncate},
		{"write-only device", null, fsWriteFile | fsTruncate | fsIoctlDev},
		{"closed", 1 << 20, 0},
	} {
		got, err := descriptorRights(tc.fd, all)
		if err != nil || got != tc.want {
			t.Errorf("%s: rights %#x (%v), want %#x", tc.name, got, err, tc.want)
		}
	}
	// Within what the ruleset handles: ABI 1 has no truncate right.
	if got, _ := descriptorRights(open(unix.O_WRONLY), handledFS(1)); got != fsWriteFile {
		t.Errorf("ABI 1: %#x, want only the write right", got)
	}
	if abi, err := ABI(); err == nil && abi > 0 {
		r, err := createRuleset(Policy{}, Enforcement{ABI: abi})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.AddDescriptors(int(w.Fd()), open(unix.O_WRONLY), dfd); err != nil {
			t.Errorf("AddDescriptors of a pipe, a file and a directory: %v", err)
		}
	}
}
