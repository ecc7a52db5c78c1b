//go:build !(linux || darwin)

package embedded

// freeBytes cannot tell here.
func freeBytes(string) (int64, bool) { return 0, false }
