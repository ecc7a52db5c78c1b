package app

import "context"

// ApplyQueues applies specs again through a's service, as a second start
// would.
func ApplyQueues(ctx context.Context, a *App, source string, specs []QueueSpec) error {
	return applyQueues(ctx, a.svc, source, specs)
}
