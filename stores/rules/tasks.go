package rules

import (
	"slices"

	"github.com/sluicehq/sluice/stores"
)

// activeMoveTask are the statuses of a move task that still holds its
// source: SQS allows one active task per source queue.
var activeMoveTask = []string{stores.MoveTaskRunning, stores.MoveTaskCancelling}

// MoveTaskActive says whether a move task in status holds its source, so
// that MoveTaskCreate refuses another for it (stores.ErrMoveTaskRunning).
// pgstore's partial unique index move_tasks_active states it in SQL,
// pinned by its TestSQLPinActiveMoveTask.
func MoveTaskActive(status string) bool {
	return slices.Contains(activeMoveTask, status)
}

// ActiveMoveTaskStatuses are the statuses MoveTaskActive accepts, for a
// store that selects active tasks in a set.
func ActiveMoveTaskStatuses() []string {
	return slices.Clone(activeMoveTask)
}

// FinishedPast returns, of one source's tasks listed newest first (as
// MoveTaskList lists them), the finished ones after the newest keep
// finished: ListMessageMoveTasks shows at most the newest few, so a store
// drops these when it creates a task rather than keep every task ever run.
func FinishedPast(tasks []*stores.MoveTask, keep int) []*stores.MoveTask {
	var out []*stores.MoveTask
	finished := 0
	for _, t := range tasks {
		if MoveTaskActive(t.Status) {
			continue
		}
		if finished++; finished > keep {
			out = append(out, t)
		}
	}
	return out
}
