package service

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
)

// Caller is whom a request acts for: an account in a region. Queues belong
// to one, and a caller reaches only its own. The entry point says who
// called (WithCaller; httpapi sets it from the account of the SigV4 key a
// request is signed with); without it a request acts for the service's
// configured account and region.
type Caller struct {
	AccountID string
	Region    string
}

type callerKey struct{}

// WithCaller records whom the request acts for.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// Region is the configured region: the one every request acts in.
func (s *Service) Region() string { return s.cfg.Region }

// AccountID is the configured account: the one requests act for unless
// the entry point says otherwise (WithCaller).
func (s *Service) AccountID() string { return s.cfg.AccountID }

// home is the configured account and region.
func (s *Service) home() Caller { return Caller{AccountID: s.cfg.AccountID, Region: s.cfg.Region} }

func (s *Service) caller(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok && c.AccountID != "" && c.Region != "" {
		return c
	}
	return s.home()
}

// A queue's name in the store is its key across accounts and regions: the
// queue name alone for the configured account and region (so a store made
// before there were several keeps its names), and
// "<account>:<region>:<name>" for the others. Queue names never contain a
// colon, so the two forms cannot meet.
const keySep = ":"

// storeName is the store's name of the caller's queue called name. A name
// from a request (a URL, an ARN, GetQueueUrl) may hold anything; one that
// could not be a queue's becomes a name no queue has, so that a colon in it
// can never spell another account's key.
func (s *Service) storeName(c Caller, name string) string {
	if contract.ValidQueueName(name, contract.IsFIFOName(name)) != nil {
		return unreachable
	}
	if c == s.home() {
		return name
	}
	return c.AccountID + keySep + c.Region + keySep + name
}

// unreachable is a store name no queue can have (an empty one).
const unreachable = ""

// owner splits a store name into the queue's caller and its name.
func (s *Service) owner(storeName string) (Caller, string) {
	parts := strings.SplitN(storeName, keySep, 3)
	if len(parts) != 3 {
		return s.home(), storeName
	}
	return Caller{AccountID: parts[0], Region: parts[1]}, parts[2]
}

// owns reports whether the store name is one of the caller's queues.
func (s *Service) owns(c Caller, storeName string) bool {
	o, _ := s.owner(storeName)
	return o == c
}

// listOwn lists, in name order, up to limit of the caller's queues whose
// names start with prefix and whose store names sort after after. The store
// lists every account's queues; the configured account's bare names share
// their range with the others' qualified ones, so those are skipped.
func (s *Service) listOwn(ctx context.Context, prefix, after string, limit int) ([]*stores.Queue, error) {
	c := s.caller(ctx)
	// A prefix is any string, not a queue's name ("orders." is the start
	// of "orders.fifo"; one no name can start with matches nothing), so it
	// is not checked as storeName checks names: a colon in it that spells
	// another account's key lists nothing of the caller's (owns skips it).
	storePrefix := prefix
	if c != s.home() {
		storePrefix = c.AccountID + keySep + c.Region + keySep + prefix
	}
	var out []*stores.Queue
	for len(out) < limit {
		want := limit - len(out)
		page, err := s.store.QueueList(ctx, &stores.QueueListParams{Prefix: storePrefix, After: after, Limit: want})
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		for _, q := range page {
			after = q.Name
			if s.owns(c, q.Name) {
				out = append(out, q)
			}
		}
		if len(page) < want {
			break
		}
	}
	return out, nil
}
