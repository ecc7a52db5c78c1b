package app

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// meteredStore is a stores.Store that times every call of the store it
// wraps, so that store latency is measured the same way for every store
// and no store imports a metrics library.
type meteredStore struct {
	s stores.Store
	m *metrics
	// billed: the store bills per operation (stores.Biller), so each call
	// counts its operations in sluice_store_billed_operations_total.
	billed bool
}

var _ stores.Store = (*meteredStore)(nil)

// begin starts timing a call and, when the store bills per operation,
// gives the call a tally of its own.
func (t *meteredStore) begin(ctx context.Context) (context.Context, *stores.Tally, time.Time) {
	var tally *stores.Tally
	if t.billed {
		ctx, tally = stores.WithTally(ctx)
	}
	return ctx, tally, time.Now()
}

func (t *meteredStore) done(op string, start time.Time, tally *stores.Tally, err error) {
	t.m.storeLatency(op).Observe(time.Since(start).Seconds())
	if err != nil && !expectedStoreErr(err) {
		t.m.storeErrors.WithLabelValues(op).Inc()
	}
	if tally != nil {
		o := tally.Ops()
		for kind, n := range map[string]int64{"read": o.Reads, "write": o.Writes, "delete": o.Deletes, "rw_txn": o.ReadWrite, "ro_txn": o.ReadOnly, "bytes": o.Bytes} {
			if n > 0 {
				t.m.storeBilled.WithLabelValues(op, kind).Add(float64(n))
			}
		}
		if o.Retries > 0 {
			t.m.storeRetries.WithLabelValues(op).Add(float64(o.Retries))
		}
	}
}

// expectedStoreErr tells the store's answers (not found, version conflict,
// ...) and cancelled calls from failures.
func expectedStoreErr(err error) bool {
	for _, e := range []error{stores.ErrQueueNotFound, stores.ErrQueueDeletedRecently, stores.ErrPurgeInProgress,
		stores.ErrVersionConflict, stores.ErrMoveTaskRunning, stores.ErrMoveTaskNotFound, context.Canceled} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (t *meteredStore) QueueCreate(ctx context.Context, p *stores.QueueCreateParams) (*stores.QueueCreateResult, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.QueueCreate(ctx, p)
	t.done("QueueCreate", start, tally, err)
	return r, err
}

func (t *meteredStore) QueueGet(ctx context.Context, p *stores.QueueGetParams) (*stores.Queue, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.QueueGet(ctx, p)
	t.done("QueueGet", start, tally, err)
	return r, err
}

func (t *meteredStore) QueueList(ctx context.Context, p *stores.QueueListParams) ([]*stores.Queue, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.QueueList(ctx, p)
	t.done("QueueList", start, tally, err)
	return r, err
}

func (t *meteredStore) QueueUpdate(ctx context.Context, p *stores.QueueUpdateParams) (*stores.Queue, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.QueueUpdate(ctx, p)
	t.done("QueueUpdate", start, tally, err)
	return r, err
}

func (t *meteredStore) QueueDelete(ctx context.Context, p *stores.QueueDeleteParams) error {
	ctx, tally, start := t.begin(ctx)
	err := t.s.QueueDelete(ctx, p)
	t.done("QueueDelete", start, tally, err)
	return err
}

func (t *meteredStore) QueuePurge(ctx context.Context, p *stores.QueuePurgeParams) error {
	ctx, tally, start := t.begin(ctx)
	err := t.s.QueuePurge(ctx, p)
	t.done("QueuePurge", start, tally, err)
	return err
}

func (t *meteredStore) QueueStats(ctx context.Context, p *stores.QueueStatsParams) (*stores.QueueStats, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.QueueStats(ctx, p)
	t.done("QueueStats", start, tally, err)
	return r, err
}

func (t *meteredStore) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MessageSend(ctx, p)
	t.done("MessageSend", start, tally, err)
	return r, err
}

func (t *meteredStore) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MessageClaim(ctx, p)
	t.done("MessageClaim", start, tally, err)
	return r, err
}

func (t *meteredStore) MessageDelete(ctx context.Context, p *stores.MessageDeleteParams) (*stores.MessageDeleteResult, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MessageDelete(ctx, p)
	t.done("MessageDelete", start, tally, err)
	return r, err
}

func (t *meteredStore) MessageChangeVisibility(ctx context.Context, p *stores.MessageChangeVisibilityParams) (*stores.MessageChangeVisibilityResult, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MessageChangeVisibility(ctx, p)
	t.done("MessageChangeVisibility", start, tally, err)
	return r, err
}

func (t *meteredStore) MessageMove(ctx context.Context, p *stores.MessageMoveParams) (*stores.MessageMoveResult, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MessageMove(ctx, p)
	t.done("MessageMove", start, tally, err)
	return r, err
}

func (t *meteredStore) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	ctx, tally, start := t.begin(ctx)
	err := t.s.MoveTaskCreate(ctx, p)
	t.done("MoveTaskCreate", start, tally, err)
	return err
}

func (t *meteredStore) MoveTaskList(ctx context.Context, p *stores.MoveTaskListParams) ([]*stores.MoveTask, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MoveTaskList(ctx, p)
	t.done("MoveTaskList", start, tally, err)
	return r, err
}

func (t *meteredStore) MoveTaskGet(ctx context.Context, p *stores.MoveTaskGetParams) (*stores.MoveTask, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MoveTaskGet(ctx, p)
	t.done("MoveTaskGet", start, tally, err)
	return r, err
}

func (t *meteredStore) MoveTaskUpdate(ctx context.Context, p *stores.MoveTaskUpdateParams) (*stores.MoveTask, error) {
	ctx, tally, start := t.begin(ctx)
	r, err := t.s.MoveTaskUpdate(ctx, p)
	t.done("MoveTaskUpdate", start, tally, err)
	return r, err
}

func (t *meteredStore) Maintain(ctx context.Context, p *stores.MaintainParams) error {
	ctx, tally, start := t.begin(ctx)
	err := t.s.Maintain(ctx, p)
	t.done("Maintain", start, tally, err)
	return err
}

func (t *meteredStore) Traits() stores.Traits { return t.s.Traits() }

func (t *meteredStore) Close() error { return t.s.Close() }
