package orderedbatch

import (
	"errors"
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// claimAttemptBound bounds how long a claim's transaction keeps starting
// new attempts. A server killed inside its own claim leaves that
// transaction open, and its locks on the candidates it read stay until the
// backend expires it; every other claim that picks the same oldest
// candidates would wait behind them, attempt after attempt (each ends
// aborted by the backend's lock timeout or wound-wait). Past the bound a
// claim starts no further attempt and tries other candidates instead. It
// never cuts an attempt short, so no commit is left with an unknown
// outcome.
const claimAttemptBound = 5 * time.Second

// errClaimBound ends a claim's transaction past claimAttemptBound.
var errClaimBound = errors.New("orderedbatch: claim attempts past their bound")

// suspectFor is how long candidates of a claim that ran out its bound are
// tried after all others.
const suspectFor = time.Minute

// suspectWindow is how many candidates beyond the suspects a claim reads
// while there are any: far more than one claim holds (at most a batch of
// ten), so that a random pick among them seldom meets another of the dead
// transaction's locks.
const suspectWindow = 50

// suspects are candidate documents a claim recently waited on past its
// bound: most likely locked by a transaction whose client is gone.
type suspects struct {
	mu    sync.Mutex
	until map[docstore.Key]time.Time
}

func (s *suspects) add(keys []docstore.Key, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = map[docstore.Key]time.Time{}
	}
	for k, t := range s.until {
		if !now.Before(t) {
			delete(s.until, k)
		}
	}
	for _, k := range keys {
		s.until[k] = now.Add(suspectFor)
	}
}

// live returns the suspects still in force, nil when there are none.
func (s *suspects) live(now time.Time) map[docstore.Key]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[docstore.Key]bool
	for k, t := range s.until {
		if now.Before(t) {
			if out == nil {
				out = map[docstore.Key]bool{}
			}
			out[k] = true
		}
	}
	return out
}
