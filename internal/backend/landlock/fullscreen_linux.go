package landlock

import (
	"os"

	"golang.org/x/sys/unix"
)

// fullScreen says whether the terminal f is in non-canonical mode, as a
// full-screen program (a TUI, an editor) keeps it; a shell's command and
// a one-shot run leave it canonical. A terminal that cannot be asked
// counts as full-screen: nothing is written into it.
func fullScreen(f *os.File) bool {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err != nil || t.Lflag&unix.ICANON == 0
}
