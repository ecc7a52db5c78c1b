//go:build !linux

package embedded

import "os"

// fdatasync makes f's data durable.
func fdatasync(f *os.File) error { return f.Sync() }

// openDirect: only Linux writes the journal around the page cache.
func openDirect(string) *os.File { return nil }
