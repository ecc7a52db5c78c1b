package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
)

// defaultMoveRate is the pace of a task started without
// MaxNumberOfMessagesPerSecond.
const defaultMoveRate = contract.MaxMoveRate

// taskHandle is what the opaque TaskHandle carries.
type taskHandle struct {
	ID        string `json:"taskId"`
	SourceArn string `json:"sourceArn"`
}

// newMessageID is a new MessageId, for a sent message or a moved one: SQS's
// are random UUIDs.
func newMessageID() string { return uuid.NewString() }

func encodeTaskHandle(h taskHandle) string {
	raw, _ := json.Marshal(h)
	return base64.StdEncoding.EncodeToString(raw)
}

func decodeTaskHandle(s string) (taskHandle, bool) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return taskHandle{}, false
	}
	var h taskHandle
	if json.Unmarshal(raw, &h) != nil || h.ID == "" {
		return taskHandle{}, false
	}
	return h, true
}

// isDeadLetterQueue tells whether some queue names q in its RedrivePolicy.
func (s *Service) isDeadLetterQueue(ctx context.Context, q *stores.Queue) (bool, error) {
	arn := s.queueARN(q.Name)
	after := ""
	for {
		page, err := s.store.QueueList(ctx, &stores.QueueListParams{After: after, Limit: 500})
		if err != nil {
			return false, s.storeErr(ctx, err)
		}
		for _, src := range page {
			after = src.Name
			if p := contract.ParseQueueConfig(src.Attributes).Redrive; p != nil && p.DeadLetterTargetArn == arn {
				return true, nil
			}
		}
		if len(page) < 500 {
			return false, nil
		}
	}
}

func (s *Service) StartMessageMoveTask(ctx context.Context, in *contract.StartMessageMoveTaskInput) (*contract.StartMessageMoveTaskOutput, error) {
	if in.SourceArn == "" {
		return nil, contract.ErrMissingParameter("SourceArn")
	}
	src, err := s.queueFromARN(ctx, in.SourceArn)
	if err != nil {
		return nil, contract.ErrResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	if ok, err := s.isDeadLetterQueue(ctx, src); err != nil {
		return nil, err
	} else if !ok {
		return nil, contract.ErrInvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
	}
	// The task keeps the ARNs as this server writes them, whatever the
	// request's spelling (ParseQueueARN reads past the partition): one
	// queue, one source, for the one-task-per-source rule and the listing.
	srcArn := s.queueARN(src.Name)
	dest := ""
	if in.DestinationArn != nil && *in.DestinationArn != "" {
		dq, err := s.queueFromARN(ctx, *in.DestinationArn)
		if err != nil {
			return nil, contract.ErrResourceNotFound("The resource that you specified for the DestinationArn parameter doesn't exist.")
		}
		if dq.FIFO != src.FIFO {
			return nil, contract.ErrInvalidParameterValue("The source and destination queues must be of the same type.")
		}
		if dq.Name == src.Name {
			// A task that moved a queue's messages into itself would never end.
			return nil, contract.ErrInvalidParameterValue("The source and destination queues must be different.")
		}
		dest = s.queueARN(dq.Name)
	}
	rate := 0
	if in.MaxNumberOfMessagesPerSecond != nil {
		if *in.MaxNumberOfMessagesPerSecond < 1 || *in.MaxNumberOfMessagesPerSecond > contract.MaxMoveRate {
			return nil, contract.ErrInvalidValue(*in.MaxNumberOfMessagesPerSecond, "MaxNumberOfMessagesPerSecond", "Must be between 1 and 500.")
		}
		rate = int(*in.MaxNumberOfMessagesPerSecond)
	}
	st, err := s.store.QueueStats(ctx, &stores.QueueStatsParams{Name: src.Name, ID: src.ID, Now: s.now()})
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	now := s.wallNow()
	handle := encodeTaskHandle(taskHandle{ID: uuid.NewString(), SourceArn: srcArn})
	err = s.store.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: &stores.MoveTask{
		Handle: handle, SourceName: src.Name, SourceArn: srcArn, DestinationArn: dest, MaxPerSecond: rate,
		Status: stores.MoveTaskRunning, ToMove: st.Visible, StartedAt: now, UpdatedAt: now, PacedTo: now,
	}, KeepFinished: maxListedMoveTasks})
	if errors.Is(err, stores.ErrMoveTaskRunning) {
		return nil, contract.ErrInvalidParameterValue("There is already a task running. Only one active task is allowed for a source queue arn at a given time.")
	}
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	return &contract.StartMessageMoveTaskOutput{TaskHandle: handle}, nil
}

func (s *Service) CancelMessageMoveTask(ctx context.Context, in *contract.CancelMessageMoveTaskInput) (*contract.CancelMessageMoveTaskOutput, error) {
	if in.TaskHandle == "" {
		return nil, contract.ErrMissingParameter("TaskHandle")
	}
	if _, ok := decodeTaskHandle(in.TaskHandle); !ok {
		return nil, contract.ErrInvalidParameterValue("Value for parameter TaskHandle is invalid.")
	}
	// A step (here or on another instance) may come between the read and
	// the update; then read again: the count must include its messages.
	// The pause before that, random and growing, takes the cancel out of
	// step with a stepping loop that would otherwise win every time.
	var err error
	for i := range 20 {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, s.storeErr(ctx, ctx.Err())
			case <-time.After(rand.N(time.Duration(min(i, 10)) * time.Millisecond)):
			}
		}
		var t, got *stores.MoveTask
		t, err = s.store.MoveTaskGet(ctx, &stores.MoveTaskGetParams{Handle: in.TaskHandle})
		if errors.Is(err, stores.ErrMoveTaskNotFound) {
			return nil, contract.ErrResourceNotFound("Task does not exist.")
		}
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		if !s.owns(s.caller(ctx), t.SourceName) {
			return nil, contract.ErrResourceNotFound("Task does not exist.") // another account's task
		}
		if t.Status != stores.MoveTaskRunning {
			return nil, contract.ErrUnsupportedOperation("Only active tasks can be cancelled.")
		}
		t.Status = stores.MoveTaskCancelled
		t.UpdatedAt = s.wallNow()
		got, err = s.store.MoveTaskUpdate(ctx, &stores.MoveTaskUpdateParams{Task: t, IfVersion: t.Version})
		if errors.Is(err, stores.ErrVersionConflict) {
			continue
		}
		if err != nil {
			return nil, s.storeErr(ctx, err)
		}
		return &contract.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: got.Moved}, nil
	}
	return nil, s.storeErr(ctx, err)
}

func (s *Service) ListMessageMoveTasks(ctx context.Context, in *contract.ListMessageMoveTasksInput) (*contract.ListMessageMoveTasksOutput, error) {
	if in.SourceArn == "" {
		return nil, contract.ErrMissingParameter("SourceArn")
	}
	limit := 1
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > maxListedMoveTasks {
			return nil, contract.ErrInvalidValue(*in.MaxResults, "MaxResults", "You must enter a number that's between 1 and 10.")
		}
		limit = int(*in.MaxResults)
	}
	src, err := s.queueFromARN(ctx, in.SourceArn)
	if err != nil {
		return nil, contract.ErrResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
	}
	// Tasks advance in passing, so a deployment without a background loop
	// (a function that scales to zero) still makes progress while watched.
	if err := s.RunMoveTasks(ctx); err != nil {
		return nil, err
	}
	tasks, err := s.store.MoveTaskList(ctx, &stores.MoveTaskListParams{SourceArn: s.queueARN(src.Name), Limit: limit})
	if err != nil {
		return nil, s.storeErr(ctx, err)
	}
	out := &contract.ListMessageMoveTasksOutput{Results: []contract.ListMessageMoveTasksResultEntry{}}
	for _, t := range tasks {
		e := contract.ListMessageMoveTasksResultEntry{
			Status: t.Status, SourceArn: t.SourceArn, DestinationArn: t.DestinationArn,
			ApproximateNumberOfMessagesMoved: t.Moved, FailureReason: t.FailureReason,
			StartedTimestamp: t.StartedAt.UnixMilli(),
		}
		if t.MaxPerSecond > 0 {
			r := int64(t.MaxPerSecond)
			e.MaxNumberOfMessagesPerSecond = &r
		}
		if t.Status == stores.MoveTaskRunning {
			e.TaskHandle = t.Handle
		}
		toMove := t.ToMove
		e.ApproximateNumberOfMessagesToMove = &toMove
		out.Results = append(out.Results, e)
	}
	return out, nil
}

// RunMoveTasks advances every running message move task by what its rate
// allows. Any instance may call it at any time, concurrently with others:
// each step is one store move that checks and counts on the task
// atomically (stores.MoveTaskStep), so a step that lost the race moves
// nothing.
func (s *Service) RunMoveTasks(ctx context.Context) error {
	tasks, err := s.store.MoveTaskList(ctx, &stores.MoveTaskListParams{Status: stores.MoveTaskRunning})
	if err != nil {
		return s.storeErr(ctx, err)
	}
	for _, t := range tasks {
		if err := s.stepMoveTask(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// maxMoveStep caps the messages of one step (one store transaction).
const maxMoveStep = 1000

// maxListedMoveTasks is how many of a source's tasks ListMessageMoveTasks
// shows at most, the newest; stores keep no more finished ones than that.
const maxListedMoveTasks = 10

// movePace is how many messages a step of t may move at now, and the
// PacedTo to store with them. The allowance comes from the task's stored
// PacedTo, not from this instance's ticker, so however many instances step
// a task they share its rate. A task nobody stepped for a while has saved
// up at most one step interval's worth.
func (s *Service) movePace(t *stores.MoveTask, now time.Time) (int, time.Time) {
	rate := int64(t.MaxPerSecond)
	if rate <= 0 {
		rate = defaultMoveRate
	}
	from := t.PacedTo
	if floor := now.Add(-max(s.cfg.MoveTaskStep, time.Second)); from.Before(floor) {
		from = floor
	}
	step := int64(maxMoveStep)
	if m := s.traits.MaxMovePerCall; m > 0 {
		step = min(step, int64(m))
	}
	n := min(int64(now.Sub(from))*rate/int64(time.Second), step)
	if n < 1 {
		return 0, from
	}
	// Rounded up to the microsecond, the precision stores keep times in,
	// so a stored PacedTo never hands back allowance.
	used := time.Duration((n*int64(time.Second) + rate - 1) / rate)
	return int(n), from.Add(used + time.Microsecond - 1).Truncate(time.Microsecond)
}

func (s *Service) stepMoveTask(ctx context.Context, t *stores.MoveTask) error {
	now := s.wallNow()
	budget, pacedTo := s.movePace(t, now)
	if budget < 1 {
		return nil
	}
	src, err := s.queueByName(ctx, t.SourceName)
	if err != nil {
		return s.endMoveTask(ctx, t, stores.MoveTaskFailed, now)
	}
	dest := ""
	if t.DestinationArn != "" {
		dest, _, _ = s.arnOwner(t.DestinationArn) // the task's own account's, checked at its start
	}
	res, err := s.store.MessageMove(ctx, &stores.MessageMoveParams{FromName: src.Name, FromID: src.ID, ToName: dest, Max: budget,
		Step: &stores.MoveTaskStep{Handle: t.Handle, IfVersion: t.Version, PacedTo: pacedTo}, NewID: newMessageID, Now: s.now()})
	switch {
	case errors.Is(err, stores.ErrQueueNotFound):
		return s.endMoveTask(ctx, t, stores.MoveTaskFailed, now)
	case errors.Is(err, stores.ErrVersionConflict), errors.Is(err, stores.ErrMoveTaskNotFound):
		return nil // stepped by another instance meanwhile, or cancelled: nothing moved
	case err != nil:
		return s.storeErr(ctx, err)
	}
	s.wakeAfterMove(ctx, res)
	// The step is counted. Should this instance stop before ending a
	// finished task, the next step (anywhere) finds nothing left and ends it.
	switch t = res.Task; {
	case res.Moved == 0 && res.Failed > 0:
		return s.endMoveTask(ctx, t, stores.MoveTaskFailed, now)
	case res.Exhausted || t.Moved >= t.ToMove:
		return s.endMoveTask(ctx, t, stores.MoveTaskCompleted, now)
	}
	return nil
}

// endMoveTask gives t a final status unless it changed since it was read
// (cancelled, or stepped by another instance, which then decides).
func (s *Service) endMoveTask(ctx context.Context, t *stores.MoveTask, status string, now time.Time) error {
	t.Status, t.UpdatedAt = status, now
	if status == stores.MoveTaskFailed {
		t.FailureReason = "AWS.SimpleQueueService.NonExistentQueue"
	}
	_, err := s.store.MoveTaskUpdate(ctx, &stores.MoveTaskUpdateParams{Task: t, IfVersion: t.Version})
	if errors.Is(err, stores.ErrVersionConflict) {
		return nil
	}
	return s.storeErr(ctx, err)
}

// Maintain steps every move task and runs one housekeeping pass over the
// store: the work no request does, for a scheduler to call when no
// process runs in the background. Safe with several instances at once.
func (s *Service) Maintain(ctx context.Context) error {
	if err := s.RunMoveTasks(ctx); err != nil {
		return fmt.Errorf("move tasks: %w", err)
	}
	return s.store.Maintain(ctx, &stores.MaintainParams{Now: s.now()})
}

// RunBackground advances move tasks and does housekeeping until ctx ends.
// A plain server runs it; a function that scales to zero relies on the
// in-passing work and Maintain, called by a scheduler, instead.
func (s *Service) RunBackground(ctx context.Context) {
	tick := time.NewTicker(s.cfg.MoveTaskStep)
	defer tick.Stop()
	lastMaintain := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := s.RunMoveTasks(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("move tasks", "err", err)
		}
		if time.Since(lastMaintain) > time.Minute {
			lastMaintain = time.Now()
			if err := s.store.Maintain(ctx, &stores.MaintainParams{Now: s.now()}); err != nil && ctx.Err() == nil {
				s.log.Warn("maintain", "err", err)
			}
		}
	}
}
