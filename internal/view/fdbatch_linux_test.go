package view

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFdBatchClosesOnlyItsOwn: memberRules' batch closes every
// descriptor it was given, a run of consecutive ones with close_range,
// and never one it was not given that lies between them.
func TestFdBatchClosesOnlyItsOwn(t *testing.T) {
	open := func() int {
		fd, err := unix.Open("/dev/null", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	isOpen := func(fd int) bool {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		return err == nil
	}
	var b fdBatch
	var mine []int
	var keep int
	for i := 0; i < 2*fdBatchMax+5; i++ {
		fd := open()
		if i == 7 {
			keep = fd // not the batch's: it must stay open
			continue
		}
		mine = append(mine, fd)
		b.add(fd)
	}
	b.flush()
	for _, fd := range mine {
		if isOpen(fd) {
			t.Errorf("descriptor %d left open", fd)
		}
	}
	if !isOpen(keep) {
		t.Fatalf("descriptor %d, not the batch's, was closed", keep)
	}
	unix.Close(keep)
}
