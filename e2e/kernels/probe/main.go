// Command probe is the kernel matrix's one probe that busybox has no
// applet for (e2e/kernels/rows.sh): `probe truncate PATH` calls
// truncate(2) on a path, which Landlock mediates only from ABI 3
// (busybox's truncate opens the file for writing first, which every ABI
// mediates). It prints what the kernel answered and exits 1 on an error.
package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "truncate" {
		fmt.Fprintln(os.Stderr, "usage: probe truncate PATH")
		os.Exit(2)
	}
	if err := syscall.Truncate(os.Args[2], 0); err != nil {
		fmt.Println("truncate:", err)
		os.Exit(1)
	}
	fmt.Println("truncated", os.Args[2])
}
