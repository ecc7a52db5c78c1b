//go:build !linux

package embedded

import "os"

// fdatasync makes f's data durable.
func fdatasync(f *os.File) error { return f.Sync() }
