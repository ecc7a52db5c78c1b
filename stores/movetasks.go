package stores

// Move task statuses (MoveTask.Status), as ListMessageMoveTasks reports
// them. The service decides when a task goes from one to another; a store
// keeps them and tells the active ones apart (stores/rules.MoveTaskActive).
// They are stored values: the PostgreSQL schema names the active ones.
const (
	MoveTaskRunning    = "RUNNING"
	MoveTaskCompleted  = "COMPLETED"
	MoveTaskCancelling = "CANCELLING"
	MoveTaskCancelled  = "CANCELLED"
	MoveTaskFailed     = "FAILED"
)
