//go:build linux || darwin

package embedded

import "syscall"

// freeBytes is what the file system of dir has free for an unprivileged
// writer.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
