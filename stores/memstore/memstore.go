// Package memstore is an in-memory stores.Store: fast, exact, and gone when
// the process ends. All of its queue logic lives in the engine sub-package,
// which the durable embedded store (stores/embedded) reuses.
package memstore

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// Store is an in-memory stores.Store. It is safe for concurrent use.
type Store struct {
	e *engine.Engine
}

var _ stores.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New() *Store {
	return &Store{e: engine.New(nil)}
}

func (s *Store) QueueCreate(ctx context.Context, p *stores.QueueCreateParams) (*stores.QueueCreateResult, error) {
	return s.e.QueueCreate(ctx, p)
}

func (s *Store) QueueGet(ctx context.Context, p *stores.QueueGetParams) (*stores.Queue, error) {
	return s.e.QueueGet(ctx, p)
}

func (s *Store) QueueList(ctx context.Context, p *stores.QueueListParams) ([]*stores.Queue, error) {
	return s.e.QueueList(ctx, p)
}

func (s *Store) QueueUpdate(ctx context.Context, p *stores.QueueUpdateParams) (*stores.Queue, error) {
	return s.e.QueueUpdate(ctx, p)
}

func (s *Store) QueueDelete(ctx context.Context, p *stores.QueueDeleteParams) error {
	return s.e.QueueDelete(ctx, p)
}

func (s *Store) QueuePurge(ctx context.Context, p *stores.QueuePurgeParams) error {
	return s.e.QueuePurge(ctx, p)
}

func (s *Store) QueueStats(ctx context.Context, p *stores.QueueStatsParams) (*stores.QueueStats, error) {
	return s.e.QueueStats(ctx, p)
}

func (s *Store) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	return s.e.MessageSend(ctx, p)
}

func (s *Store) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	return s.e.MessageClaim(ctx, p)
}

func (s *Store) MessageDelete(ctx context.Context, p *stores.MessageDeleteParams) (stores.ReceiptOutcome, error) {
	return s.e.MessageDelete(ctx, p)
}

func (s *Store) MessageChangeVisibility(ctx context.Context, p *stores.MessageChangeVisibilityParams) (*stores.MessageChangeVisibilityResult, error) {
	return s.e.MessageChangeVisibility(ctx, p)
}

func (s *Store) MessageMove(ctx context.Context, p *stores.MessageMoveParams) (*stores.MessageMoveResult, error) {
	return s.e.MessageMove(ctx, p)
}

func (s *Store) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	return s.e.MoveTaskCreate(ctx, p)
}

func (s *Store) MoveTaskList(ctx context.Context, p *stores.MoveTaskListParams) ([]*stores.MoveTask, error) {
	return s.e.MoveTaskList(ctx, p)
}

func (s *Store) MoveTaskGet(ctx context.Context, handle string) (*stores.MoveTask, error) {
	return s.e.MoveTaskGet(ctx, handle)
}

func (s *Store) MoveTaskUpdate(ctx context.Context, p *stores.MoveTaskUpdateParams) (*stores.MoveTask, error) {
	return s.e.MoveTaskUpdate(ctx, p)
}

func (s *Store) Maintain(ctx context.Context, now time.Time) error {
	return s.e.Maintain(ctx, now)
}

func (s *Store) Subscribe(queueName string) (<-chan struct{}, func()) {
	return s.e.Subscribe(queueName)
}

// Close makes every later operation fail with engine.ErrClosed.
func (s *Store) Close() error {
	s.e.Close()
	return nil
}
