package embedded

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, without the metadata that does not
// change (the journal's size does not).
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
