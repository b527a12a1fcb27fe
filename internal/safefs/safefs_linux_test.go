//go:build linux

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes a directory with dir/ (holding file), file, fifo, and links
// into dir and to the outside (the test's other temporary directory).
func tree(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "dir", "file"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	must(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(t, os.Symlink("dir", filepath.Join(root, "linkdir")))
	must(t, os.Symlink("dir/file", filepath.Join(root, "linkfile")))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), nil, 0o644))
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openRoot(t *testing.T, root string) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// refused checks that err is the refusal want (errors.Is) and names path.
func refused(t *testing.T, what string, fd int, err error, want error) {
	t.Helper()
	if err == nil {
		unix.Close(fd)
		t.Fatalf("%s: opened (fd %d), want a refusal matching %v", what, fd, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want a refusal matching %v", what, err, want)
	}
	if fd != -1 {
		t.Fatalf("%s: refused but returned fd %d, want -1", what, fd)
	}
}

// TestOpenRefuses: Open, OpenFd and OpenBeneathFd refuse a symlink in any
// component (the last one included), a magic link, and, below a
// directory, any way out of it.
func TestOpenRefuses(t *testing.T) {
	root, _ := tree(t)
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"symlink at the end", "linkfile", ErrSymlink},
		{"symlink to a directory at the end", "linkdir", ErrSymlink},
		{"symlink on the way", "linkdir/file", ErrSymlink},
		{"symlink out of the tree on the way", "out/secret", ErrSymlink},
		{"missing", "dir/none", unix.ENOENT},
		{"file on the way", "file/x", unix.ENOTDIR},
	} {
		fd, err := OpenFd(filepath.Join(root, tc.path), unix.O_RDONLY, 0)
		refused(t, "OpenFd "+tc.name, fd, err, tc.want)
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Path != filepath.Join(root, tc.path) {
			t.Errorf("OpenFd %s: %v does not name the path", tc.name, err)
		}
		f, err := Open(filepath.Join(root, tc.path), unix.O_RDONLY, 0)
		if f != nil {
			f.Close()
		}
		refused(t, "Open "+tc.name, -1, err, tc.want)
	}
	// A magic link (/proc/PID/cwd) is refused like a symlink.
	fd, err := OpenFd("/proc/"+strconv.Itoa(os.Getpid())+"/cwd", unix.O_PATH, 0)
	refused(t, "OpenFd magic link", fd, err, ErrSymlink)

	dir := openRoot(t, root)
	for _, tc := range []struct {
		name, rel string
		want      error
	}{
		{"..", "../x", unix.EXDEV},
		{".. after a directory", "dir/../../x", unix.EXDEV},
		{"absolute path", root + "/file", unix.EXDEV},
		{"symlink at the end", "linkfile", ErrSymlink},
		{"symlink on the way", "linkdir/file", ErrSymlink},
		{"symlink out of the tree", "out/secret", ErrSymlink},
	} {
		fd, err := OpenBeneathFd(dir, tc.rel, "beneath/"+tc.rel, unix.O_RDONLY, 0)
		refused(t, "OpenBeneathFd "+tc.name, fd, err, tc.want)
	}
	// What is inside opens (the refusals above are not all refusals).
	for _, p := range []string{filepath.Join(root, "dir", "file"), filepath.Join(root, "dir")} {
		fd, err := OpenFd(p, unix.O_PATH, 0)
		must(t, err)
		unix.Close(fd)
	}
	fd, err = OpenBeneathFd(dir, "dir/file", "dir/file", unix.O_RDONLY, 0)
	must(t, err)
	unix.Close(fd)
}

// TestMkdirRefuses: Mkdir creates a missing directory but refuses a
// symlink as the directory or on its way, a missing parent and a file in
// its place, creating nothing.
func TestMkdirRefuses(t *testing.T) {
	root, outside := tree(t)
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"symlink as the directory", "linkdir", ErrSymlink},
		{"symlink on the way", "out/new", ErrSymlink},
		{"symlink on the way, in the tree", "linkdir/new", ErrSymlink},
		{"missing parent", "none/new", unix.ENOENT},
		{"file in its place", "file", unix.ENOTDIR},
		{"file as parent", "file/new", unix.ENOTDIR},
	} {
		if err := Mkdir(filepath.Join(root, tc.path)); !errors.Is(err, tc.want) {
			t.Errorf("Mkdir %s: %v, want a refusal matching %v", tc.name, err, tc.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Mkdir through a symlink created %s/new (%v)", outside, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "dir", "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Mkdir through a symlink created dir/new (%v)", err)
	}
	must(t, Mkdir(filepath.Join(root, "dir")))
	must(t, Mkdir(filepath.Join(root, "dir", "made")))
	if st, err := os.Lstat(filepath.Join(root, "dir", "made")); err != nil || !st.IsDir() {
		t.Fatalf("Mkdir did not create dir/made: %v", err)
	}
}

// TestWalkerRefuses: Walker.Open refuses a symlink on the way or at the
// end, a ".." component, a file on the way, a file where a directory is
// expected and the reverse, a FIFO, a failed create and a failed Made, and
// leaves nothing behind where it was refused on the way.
func TestWalkerRefuses(t *testing.T) {
	root, outside := tree(t)
	rfd := openRoot(t, root)
	for _, tc := range []struct {
		name, rel string
		end       Kind
		first     bool
		want      error
	}{
		{"symlink on the way", "linkdir/new", File, false, ErrSymlink},
		{"symlink out of the tree on the way", "out/new", Dir, false, ErrSymlink},
		{"symlink at the end", "linkfile", File, false, ErrSymlink},
		{"symlink at the end, created first", "linkfile", Any, true, ErrSymlink},
		{"symlink to a directory at the end", "linkdir", Dir, true, ErrSymlink},
		{"..", "../x", File, false, ErrEscape},
		{".. inside", "dir/../../x", Dir, false, ErrEscape},
		{"file on the way", "file/new", File, false, ErrNotDir},
		{"file where a directory is expected", "file", Dir, false, ErrNotDir},
		{"directory where a file is expected", "dir", File, false, ErrIsDir},
		{"directory where a file is expected, created first", "dir", File, true, ErrIsDir},
		{"FIFO", "fifo", Any, false, ErrNotFileOrDir},
		{"FIFO on the way", "fifo/new", File, false, ErrNotFileOrDir},
	} {
		fd, err := Walker{CreateFirst: tc.first}.Open(rfd, root, tc.rel, tc.end)
		refused(t, "Walker.Open "+tc.name, fd, err, tc.want)
	}
	for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(root, "dir", "new"), filepath.Join(filepath.Dir(root), "x")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused walk created %s (%v)", p, err)
		}
	}

	// A failed create is named; a name that appears meanwhile (EEXIST)
	// as a symlink is refused like one found there.
	denied := Walker{Create: func(int, string, string, bool) error { return unix.EACCES }}
	fd, err := denied.Open(rfd, root, "dir/new", File)
	refused(t, "Walker.Open failed create", fd, err, unix.EACCES)
	raced := Walker{Create: func(parent int, name, _ string, _ bool) error {
		if err := unix.Symlinkat(outside, parent, name); err != nil {
			return err
		}
		return unix.EEXIST
	}}
	fd, err = raced.Open(rfd, root, "dir/raced/new", File)
	refused(t, "Walker.Open symlink planted between lookup and create", fd, err, ErrSymlink)
	if _, err := os.Lstat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the walk went through the planted symlink: %s/new exists (%v)", outside, err)
	}

	// Made's error ends the walk, after the name was made.
	errMade := errors.New("made refused")
	var made []string
	w := Walker{Made: func(_ int, path string, _ bool) error {
		made = append(made, path)
		return errMade
	}}
	fd, err = w.Open(rfd, root, "dir/m1/m2", Dir)
	refused(t, "Walker.Open failed Made", fd, err, errMade)
	if len(made) != 1 || made[0] != root+"/dir/m1" {
		t.Errorf("Made was told %q, want only %s/dir/m1", made, root)
	}

	// What is allowed opens, creating the missing names.
	fd, err = Walker{}.Open(rfd, root, "dir/a/b", File)
	must(t, err)
	unix.Close(fd)
	if st, err := os.Lstat(filepath.Join(root, "dir", "a", "b")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the walk did not create dir/a/b as a file: %v", err)
	}
}
