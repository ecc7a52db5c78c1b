package embedded

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, without the metadata that does not
// change (the journal's size does not).
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// openDirect opens path for writes that bypass the page cache and return
// once durable (O_DIRECT|O_DSYNC), or returns nil where the file system
// cannot (tmpfs refuses O_DIRECT).
func openDirect(path string) *os.File {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT|syscall.O_DSYNC, 0)
	if err != nil {
		return nil
	}
	return f
}
