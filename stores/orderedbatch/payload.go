package orderedbatch

import (
	"fmt"

	"github.com/sluicehq/sluice/stores/docstore"
)

// payloads reads and caches the payloads of manifests and messages in a
// transaction (chunks are read once each).
type payloads struct {
	t    *txn
	done map[docstore.Key][]body
}

func newPayloads(t *txn) *payloads { return &payloads{t: t, done: map[docstore.Key][]body{}} }

// get returns the n bodies of owner's payload.
func (p *payloads) get(owner docstore.Key, inline []byte, chunks, n int) ([]body, error) {
	if b, ok := p.done[owner]; ok {
		return b, nil
	}
	raw := inline
	if chunks > 0 {
		keys := make([]docstore.Key, chunks)
		for i := range keys {
			keys[i] = chunkKey(owner, i)
		}
		docs, err := p.t.get(keys...)
		if err != nil {
			return nil, err
		}
		raw = nil
		for i, d := range docs {
			if d == nil {
				return nil, fmt.Errorf("orderedbatch: chunk %d of %v is missing", i, owner)
			}
			c, _ := d.Fields[fData].([]byte)
			raw = append(raw, c...)
		}
	}
	b, err := decodePayload(raw, n)
	if err != nil {
		return nil, fmt.Errorf("%w in %v", err, owner)
	}
	p.done[owner] = b
	return b, nil
}

// deleteWithChunks removes a manifest or message and its chunks.
func (t *txn) deleteWithChunks(k docstore.Key, chunks int) {
	t.del(k)
	for i := range chunks {
		t.del(chunkKey(k, i))
	}
}
