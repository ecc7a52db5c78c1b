package embedded

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// directBlock is the unit of a direct write: its offset, length and
// buffer address are multiples of it (the logical block size of the file
// systems the journal runs on; 4096 covers 512-byte devices too).
const directBlock = 4096

// alignedBuffer returns a zeroed buffer of n bytes whose address is a
// multiple of directBlock, which O_DIRECT requires and Go's allocator does
// not promise.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directBlock)
	skip := 0
	if a := int(uintptr(unsafe.Pointer(&b[0])) & (directBlock - 1)); a != 0 {
		skip = directBlock - a
	}
	return b[skip : skip+n : skip+n]
}

// writeDirect writes rec at j.off through the direct handle: the blocks
// from the one j.off falls in to the one rec ends in, the bytes before
// j.off in the first block as they are (j.tail) and zeros after rec in the
// last, so a later record finds no stale bytes there. The write returns
// once durable. A record that only grows the file's last block rewrites the
// bytes of acknowledged records with the same bytes: a torn write leaves
// each sector old or new, and both hold them. errors.ErrUnsupported: the
// file system refused the direct write (nothing was written).
func (j *generation) writeDirect(rec []byte) error {
	start := j.off &^ (directBlock - 1)
	n := len(j.tail) + len(rec)
	size := (n + directBlock - 1) &^ (directBlock - 1)
	if cap(j.buf) < size {
		j.buf = alignedBuffer(max(size, 2*cap(j.buf)))
	}
	buf := j.buf[:size]
	copy(buf, j.tail)
	copy(buf[len(j.tail):], rec)
	clear(buf[n:])
	if _, err := j.direct.WriteAt(buf, start); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
		}
		return err
	}
	end := j.off + int64(len(rec))
	j.tail = append(j.tail[:0], buf[end&^(directBlock-1)-start:n]...)
	j.size = max(j.size, start+int64(size))
	return nil
}

// loadTail reads the bytes of the block j.off falls in that come before
// it, which the next direct write writes again.
func (j *generation) loadTail() error {
	start := j.off &^ (directBlock - 1)
	j.tail = make([]byte, j.off-start)
	_, err := j.f.ReadAt(j.tail, start)
	return err
}
